//! [`Db::start_background`]: the wall-clock driver of the steppable background work, on a
//! thread of its own.

use super::Db;
use crate::error::{Error, Result};
use std::sync::Arc;

/// Maintenance steps [`Db::start_background`] runs back to back, at most, while the page
/// cleaner finds whole batches to write or a checkpoint is behind the log, before it pauses
/// again.
pub const CLEANER_BURST: u32 = 64;

/// Background maintenance running on its own thread (wall-clock mode); stops when dropped.
pub struct Background {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Background {
    /// Stops the thread and returns the first error it met, if any.
    pub fn stop(mut self) -> Result<()> {
        self.halt()
    }

    fn halt(&mut self) -> Result<()> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => {
                // Woken from its pause: a long `every` does not hold the stop up.
                t.thread().unpark();
                t.join()
                    .unwrap_or_else(|_| Err(Error::Poisoned("background thread panicked".into())))
            }
            None => Ok(()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

impl Db {
    /// Runs [`Db::maintenance`] every `every` on a background thread (the wall-clock driver of
    /// the steppable background work; in virtual time the scheduler calls `maintenance` itself).
    /// With [`crate::DbConfig::durable_commits`] off it also writes the log each step, so a commit is
    /// durable within about `every`. While the page cleaner finds whole batches to write
    /// (`cleaner_clean_fraction`), steps follow each other without the pause, up to
    /// [`CLEANER_BURST`] in a row: the cleaner keeps up with the misses that dirty its window,
    /// so that they find clean victims rather than write pages ahead themselves. So do they
    /// while a checkpoint under way is behind the log (the log already past a checkpoint
    /// interval, `checkpoint_log_fill`): at one batch a pause it may not end before the log is
    /// short, and an operation then writes every dirty page itself, in the foreground.
    pub fn start_background(&self, every: std::time::Duration) -> Background {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let db = self.clone();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut burst = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let more = db.shared.maintenance()?;
                if !db.shared.durable_commits {
                    // Commits that did not wait for the log become durable here.
                    db.flush_log()?;
                }
                burst = if more { burst + 1 } else { 0 };
                if burst == 0 || burst >= CLEANER_BURST {
                    burst = 0;
                    // Parked rather than asleep, so that a stop wakes it (`Background::halt`).
                    let until = std::time::Instant::now() + every;
                    while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                        let left = until.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::park_timeout(left);
                    }
                }
            }
            Ok(())
        });
        Background {
            stop,
            thread: Some(thread),
        }
    }
}
