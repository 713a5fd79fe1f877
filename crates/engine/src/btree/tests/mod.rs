//! Unit tests of the B+tree: the node format (`node.rs`) and the tree algorithms against a
//! `BTreeMap` oracle over an in-memory page store (`tree.rs`). Proptest keeps the failure seeds of
//! `tree.rs` in `crates/engine/proptest-regressions/btree/tests/tree.txt` (its default place for
//! tests under `src/`).

mod beside;
mod node;
mod tree;
