//! The frame scheduler and the run loops built on it. The window and headless modes share
//! one [`Runner`] and one [`driver::run_loop`]; only their [`driver::Frontend`] differs
//! (`windowed`, `headless`). `app` sits above `frontend` and below `netplay`, and imports
//! nothing from `netplay`, `serve` or `session`.

pub mod core_session;
pub mod driver;
pub mod headless;
pub mod interrupt;
pub mod local;
pub mod machine;
pub mod options;
pub mod play;
pub mod record;
pub mod replay;
pub mod rollback_check;
pub mod runner;
pub mod stats;
pub mod sync_test;
pub mod video_capture;
pub mod windowed;

pub use driver::{run_loop, Frontend, Requests};
pub use local::LocalFeed;
pub use options::PlayOptions;
pub use play::{play, PlayError, PlaySummary};
pub use record::{RecordMode, Recording};
pub use runner::{
    Clock, Costs, EndReason, Feed, FeedPoll, FrameObserver, Machine, ObserverError, RunError,
    RunStats, Runner, RunnerConfig, Status, SystemClock, Tick,
};
