//! The health of an open database: one poison signal shared by every component (the engine, the
//! log, the write path). It is written once, by the first component that meets an error after
//! which the in-memory state can no longer be trusted (a failed device write or flush: the device
//! may hold anything, a failed fsync may even have dropped earlier writes), and read by all of them
//! before they act. Only recovery, at the next open, can tell what is durable.

use crate::error::{Error, Result};
use std::sync::{Arc, OnceLock};

/// A shared poison flag; cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Health {
    why: Arc<OnceLock<String>>,
}

impl Health {
    pub fn new() -> Health {
        Health::default()
    }

    /// Fails with [`Error::Poisoned`] once the handle is poisoned.
    /// Replaces this signal with `shared` (a component joining the database's), carrying over a
    /// poisoning this one already had.
    pub fn join(&mut self, shared: Health) {
        if let Err(Error::Poisoned(why)) = self.check() {
            shared.poison_with(|| why);
        }
        *self = shared;
    }

    pub fn check(&self) -> Result<()> {
        match self.why.get() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    pub fn is_poisoned(&self) -> bool {
        self.why.get().is_some()
    }

    /// Poisons the handle with `why` (the first reason is kept).
    pub fn poison_with(&self, why: impl FnOnce() -> String) {
        if self.why.get().is_none() {
            let _ = self.why.set(why());
        }
    }

    /// Poisons the handle because of `e`.
    pub fn poison(&self, e: &Error) {
        self.poison_with(|| e.to_string());
    }

    /// Passes a result through, poisoning the handle on a device error.
    pub fn guard<T>(&self, r: Result<T>) -> Result<T> {
        self.note(&r);
        r
    }

    /// Poisons the handle if `r` is a device error.
    pub fn note<T>(&self, r: &Result<T>) {
        if let Err(e @ Error::Device(_)) = r {
            self.poison(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reason_wins_and_is_shared() {
        let h = Health::new();
        let other = h.clone();
        assert!(h.check().is_ok());
        assert!(h
            .guard::<()>(Err(Error::Conflict { what: "x".into() }))
            .is_err());
        assert!(h.check().is_ok(), "only device errors poison");
        other.poison_with(|| "first".into());
        h.poison_with(|| "second".into());
        assert_eq!(h.check(), Err(Error::Poisoned("first".into())));
    }
}
