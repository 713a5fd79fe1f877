//! The catalog: the named trees of a database, loaded from the meta page at open and kept in
//! memory, and the [`Tree`] handles given to users. A handle carries the number of the database
//! open it came from, so a handle used with another database (or after a reopen) is refused
//! instead of touching whatever page has its root's number there.

use crate::error::{Error, Result};
use crate::meta::TreeEntry;
use crate::page::PageId;
use crate::wal::record::TreeId;
use std::collections::HashMap;

/// A handle on a named tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub(crate) id: TreeId,
    pub(crate) root: PageId,
    name: String,
    /// The `Db` handle (one open of a database) the tree belongs to.
    pub(crate) instance: u64,
}

impl Tree {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn id(&self) -> TreeId {
        self.id
    }
    /// Page id of the tree's root (it never moves), for tools and tests.
    pub fn root_page(&self) -> PageId {
        self.root
    }
}

/// A process-wide counter of opened databases (see the module documentation).
fn next_instance() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The trees of one open database.
pub(crate) struct Catalog {
    trees: HashMap<String, Tree>,
    instance: u64,
}

impl Catalog {
    /// An empty catalog for a new open of a database.
    pub fn new() -> Catalog {
        Catalog {
            trees: HashMap::new(),
            instance: next_instance(),
        }
    }

    /// Replaces the trees with the meta page's entries.
    pub fn load(&mut self, entries: Vec<TreeEntry>) {
        let instance = self.instance;
        self.trees = entries
            .into_iter()
            .map(|e| {
                (
                    e.name.clone(),
                    Tree {
                        id: e.id,
                        root: e.root,
                        name: e.name,
                        instance,
                    },
                )
            })
            .collect();
    }

    /// Records a tree just created (committed) and returns its handle.
    pub fn add(&mut self, id: TreeId, root: PageId, name: &str) -> Tree {
        let tree = Tree {
            id,
            root,
            name: name.into(),
            instance: self.instance,
        };
        self.trees.insert(name.into(), tree.clone());
        tree
    }

    pub fn contains(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    pub fn get(&self, name: &str) -> Result<Tree> {
        self.trees
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTree(name.into()))
    }

    pub fn by_id(&self, id: TreeId) -> Result<Tree> {
        self.trees
            .values()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| Error::NoSuchTree(format!("#{id}")))
    }

    /// Names of all trees, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.keys().cloned().collect();
        v.sort();
        v
    }

    pub fn all(&self) -> Vec<Tree> {
        self.trees.values().cloned().collect()
    }

    /// Refuses a handle from another database handle.
    pub fn check_handle(&self, tree: &Tree) -> Result<()> {
        if tree.instance != self.instance {
            return Err(Error::InvalidArgument(format!(
                "tree '{}' was opened on another database handle (or before a reopen): \
                 get it from this one with Db::open_tree",
                tree.name()
            )));
        }
        Ok(())
    }
}
