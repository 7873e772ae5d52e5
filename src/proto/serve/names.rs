//! Room names the server makes up: two short words and two digits ("amber-otter-42"), easy
//! to read aloud over voice chat and to type. 64 x 64 x 100 = 409,600 names; a taken one is
//! drawn again.

use rand::Rng;

const ADJECTIVES: [&str; 64] = [
    "amber", "azure", "bold", "brave", "brisk", "calm", "clever", "cosmic", "crisp", "dusty",
    "eager", "early", "fancy", "fast", "fierce", "fond", "gentle", "giant", "glad", "golden",
    "grand", "green", "happy", "hidden", "honest", "icy", "jolly", "kind", "lazy", "lively",
    "lucky", "mellow", "merry", "mighty", "misty", "neat", "noble", "odd", "pale", "plain",
    "polite", "proud", "quick", "quiet", "rapid", "rare", "red", "rosy", "royal", "shiny",
    "silent", "silver", "sleepy", "smooth", "snowy", "solar", "spicy", "steady", "sunny", "swift",
    "tidy", "violet", "warm", "witty",
];

const NOUNS: [&str; 64] = [
    "anchor", "apple", "arcade", "badger", "banjo", "beacon", "bison", "breeze", "camel", "canyon",
    "castle", "cedar", "cobra", "comet", "coral", "crane", "dragon", "eagle", "ember", "falcon",
    "ferret", "forest", "gecko", "glacier", "harbor", "hawk", "heron", "island", "jaguar",
    "kettle", "koala", "lantern", "lemon", "lizard", "llama", "lotus", "maple", "meadow", "meteor",
    "moose", "nebula", "ocean", "orchid", "otter", "owl", "panda", "parrot", "pepper", "pixel",
    "puffin", "rabbit", "raven", "river", "rocket", "salmon", "shark", "sparrow", "tiger", "tulip",
    "turtle", "valley", "walrus", "willow", "zebra",
];

/// A fresh room name.
pub fn room_name(rng: &mut impl Rng) -> String {
    format!(
        "{}-{}-{:02}",
        ADJECTIVES[rng.gen_range(0..ADJECTIVES.len())],
        NOUNS[rng.gen_range(0..NOUNS.len())],
        rng.gen_range(0..100)
    )
}

/// A name a player may choose: 1 to 32 bytes of letters, digits, '-' and '_', so that it
/// reads back exactly as typed in a terminal and on the wire.
pub fn valid_room_name(name: &str) -> bool {
    (1..=crate::session::msg::MAX_ROOM_NAME).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn made_up_names_are_valid_and_varied() {
        let mut rng = SmallRng::seed_from_u64(3);
        let names: std::collections::HashSet<String> =
            (0..1000).map(|_| room_name(&mut rng)).collect();
        assert!(names.len() > 990);
        assert!(names.iter().all(|n| valid_room_name(n)));
        assert!(!valid_room_name(""));
        assert!(!valid_room_name("a b"));
        assert!(!valid_room_name("\u{1b}[2J"));
        assert!(!valid_room_name(&"x".repeat(33)));
    }
}
