//! TPC-C terminals whose transactions interleave statement by statement, deterministically.
//!
//! The virtual-time driver runs a transaction in one step, so two transactions never overlap and
//! a version store serves one writer at a time. Paper 003's Figure 4 is about the opposite:
//! many snapshot transactions in flight at once, each appending its before-images to its own
//! rollback segment. Here each terminal is an OS thread, and a baton lets exactly one of them run
//! at a time: it passes round-robin to the next terminal at every pause between statements (see
//! [`super::txns::Ctx::pause`]) and after every transaction. The order of everything the engine
//! sees is then fixed by the seed, so a run gives the same numbers every time.
//!
//! No engine call may wait for another terminal (a waiting holder of the baton would stall them
//! all): under snapshot isolation and the engine's no-wait locks a conflict is an immediate
//! `Error::Conflict`. The terminal then gives up its turns until another transaction ends (at
//! most four rounds), as a lock wait would, and retries.

use super::input::Terminal;
use super::schema::Tables;
use super::txns::TxnCounts;
use super::TpccError;
use std::sync::{Condvar, Mutex};
use wafer_engine::Db;

/// Whose turn it is, among the terminals still running.
struct Baton {
    state: Mutex<BatonState>,
    turn_changed: Condvar,
}

struct BatonState {
    turn: usize,
    live: Vec<bool>,
}

impl Baton {
    fn new(n: usize) -> Baton {
        Baton {
            state: Mutex::new(BatonState {
                turn: 0,
                live: vec![true; n],
            }),
            turn_changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BatonState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Blocks until it is `me`'s turn.
    fn wait_turn(&self, me: usize) {
        let mut s = self.lock();
        while s.turn != me {
            s = self.turn_changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Hands the turn to the next live terminal after `me` (`me` itself if it is the last).
    fn hand_on(s: &mut BatonState, me: usize) {
        let n = s.live.len();
        for k in 1..=n {
            let next = (me + k) % n;
            if s.live[next] {
                s.turn = next;
                return;
            }
        }
    }

    /// `me` yields: the next terminal runs, and `me` waits for its turn to come round.
    fn pass(&self, me: usize) {
        {
            let mut s = self.lock();
            debug_assert_eq!(s.turn, me, "only the holder passes the baton");
            Self::hand_on(&mut s, me);
        }
        self.turn_changed.notify_all();
        self.wait_turn(me);
    }

    /// `me` is done (or failed): it leaves the rotation, handing the turn on if it held it.
    fn leave(&self, me: usize) {
        {
            let mut s = self.lock();
            s.live[me] = false;
            if s.turn == me {
                Self::hand_on(&mut s, me);
            }
        }
        self.turn_changed.notify_all();
    }
}

/// Leaves the rotation however the terminal's thread ends (an error or a panic included), so
/// the others never wait for a turn that cannot come.
struct LeaveOnDrop<'a>(&'a Baton, usize);

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// What the interleaved terminals did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InterleavedRun {
    /// Transactions by type, conflicts included.
    pub txns: TxnCounts,
    /// Pauses taken (turns handed on between statements).
    pub pauses: u64,
}

/// Runs `terminals` (their ids are their indices) interleaved until `stop_after` transactions
/// have completed (committed or rolled back by design). `before_statement` runs at the start of
/// every turn, with the terminal's index (the caller charges CPU time to a virtual clock there);
/// `now` gives the date a transaction runs at.
pub fn run_interleaved(
    db: &Db,
    tables: &Tables,
    terminals: Vec<Terminal>,
    stop_after: u64,
    before_statement: &(dyn Fn(usize) + Sync),
    now: &(dyn Fn() -> u64 + Sync),
) -> Result<InterleavedRun, TpccError> {
    let n = terminals.len();
    if n == 0 {
        return Err(TpccError::Config("no terminals".into()));
    }
    let baton = Baton::new(n);
    // Completed transactions, pauses, and whether a terminal failed (only the baton holder
    // touches them).
    let done = Mutex::new((TxnCounts::default(), 0u64, false));
    let results: Vec<Result<(), TpccError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = terminals
            .into_iter()
            .enumerate()
            .map(|(me, mut term)| {
                let (baton, done) = (&baton, &done);
                scope.spawn(move || -> Result<(), TpccError> {
                    let _leave = LeaveOnDrop(baton, me);
                    baton.wait_turn(me);
                    loop {
                        {
                            let d = done.lock().expect("counts");
                            if d.0.total() >= stop_after || d.2 {
                                return Ok(());
                            }
                        }
                        before_statement(me);
                        let pause = || {
                            done.lock().expect("counts").1 += 1;
                            baton.pass(me);
                            before_statement(me);
                        };
                        let (out, _) = term
                            .step_paused(db, tables, now(), false, &pause)
                            .inspect_err(|_| done.lock().expect("counts").2 = true)?;
                        let completed = {
                            let mut d = done.lock().expect("counts");
                            d.0.record(out.kind, out.exec.as_ref());
                            d.0.total()
                        };
                        baton.pass(me);
                        if out.exec.is_none() {
                            // A conflict: wait, as a lock wait would, until some other
                            // transaction ends (the holder, most likely), at most a few rounds.
                            for _ in 0..4 * n {
                                if done.lock().expect("counts").0.total() != completed {
                                    break;
                                }
                                baton.pass(me);
                            }
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(TpccError::Config("a terminal panicked".into())))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    let (txns, pauses, _) = done.into_inner().expect("counts");
    Ok(InterleavedRun { txns, pauses })
}
