//! The password checks a room's creator makes for the server: the challenges under way and
//! the verdicts given, by the server's ticket. Holds no keys and sends nothing; it must not
//! import the [`JoinSession`](super::JoinSession) that relays its answers.

use std::collections::VecDeque;

use rand::rngs::StdRng;

use crate::session::auth::Challenger;
use crate::session::msg::RelayStep;

/// Password checks a room's creator keeps under way at once (oldest dropped).
const MAX_CHECKS: usize = 64;

/// The creator's half of the password checks the server relays.
#[derive(Debug, Default)]
pub(super) struct PasswordChecks {
    /// The challenges under way, by the server's ticket (oldest first).
    checks: VecDeque<(u32, Challenger)>,
    /// Verdicts given, by ticket, to answer a repeated answer the same (oldest first).
    verdicts: VecDeque<(u32, bool)>,
}

/// What one relayed step asks this end to do.
pub(super) struct Reply {
    /// The step to send back to the server.
    pub step: RelayStep,
    /// A new verdict: whether the joiner's password was right.
    pub judged: Option<bool>,
}

impl PasswordChecks {
    /// Makes the challenge, then judges the answer; `None` when there is nothing to say (an
    /// answer to no challenge under way, or a step meant for the joiner's side).
    pub fn handle(
        &mut self,
        password: &str,
        ticket: u32,
        step: RelayStep,
        rng: &mut StdRng,
    ) -> Option<Reply> {
        match step {
            RelayStep::Asks => {
                let challenge = match self.checks.iter().find(|(t, _)| *t == ticket) {
                    Some((_, c)) => c.message(),
                    None => {
                        let c = Challenger::new(password, rng);
                        let m = c.message();
                        if self.checks.len() >= MAX_CHECKS {
                            self.checks.pop_front();
                        }
                        self.checks.push_back((ticket, c));
                        m
                    }
                };
                Some(Reply {
                    step: RelayStep::Challenge(challenge),
                    judged: None,
                })
            }
            RelayStep::Answer { msg, confirm } => {
                if let Some((_, admitted)) = self.verdicts.iter().find(|(t, _)| *t == ticket) {
                    // Our verdict was lost on the way: the same again.
                    return Some(Reply {
                        step: RelayStep::Verdict(*admitted),
                        judged: None,
                    });
                }
                let i = self.checks.iter().position(|(t, _)| *t == ticket)?;
                let (_, challenger) = self.checks.remove(i)?;
                let admitted = challenger.verify(&msg, &confirm);
                if self.verdicts.len() >= MAX_CHECKS {
                    self.verdicts.pop_front();
                }
                self.verdicts.push_back((ticket, admitted));
                Some(Reply {
                    step: RelayStep::Verdict(admitted),
                    judged: Some(admitted),
                })
            }
            RelayStep::Challenge(_) | RelayStep::Verdict(_) => None,
        }
    }
}
