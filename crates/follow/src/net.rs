//! A group's row changes to one keyed table, reduced to their net effect
//! per key, so PostgreSQL gets one DELETE, one UPDATE and one INSERT per
//! table and group instead of a statement per change.
//!
//! Changes are taken in commit order. What PostgreSQL must hold before the
//! group is decided by each key's first change (an update or a delete
//! finds a row, an insert finds none); what it holds after, by its last.
//! A key update is a delete of the old key and an insert of the new one,
//! so an UPDATE never changes a key and no statement of the three can
//! meet a row another of them moved.
//!
//! A key only updated in the group also keeps which columns its updates
//! changed, so only those are staged and set: the COPY parses, and the
//! UPDATE writes, what changed rather than every column
//! (docs/PERFORMANCE.md, "Live").

use std::collections::HashMap;

use fbunload_journal::ChangeKind;

/// A key's values as text, in key order (key columns are never null).
pub type Key = Vec<String>;
/// A row's values as PostgreSQL reads them (`None`: NULL), in the
/// order of the table's columns.
pub type Row = Vec<Option<String>>;

/// What one key's changes in a group come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Net {
    /// The first change found a row (update, delete): PostgreSQL must
    /// hold it before the group.
    pub expects_row: bool,
    /// The row after the last change; `None`: gone.
    pub after: Option<Row>,
    /// The first change and its transaction, for a message.
    pub first: (u64, ChangeKind),
    /// Of a key only updated in the group: the columns (in the order of
    /// a [`Row`]) its updates changed; `None`: every column (an insert,
    /// a row put again after a delete, or changes not known).
    pub changed: Option<Vec<bool>>,
}

/// What PostgreSQL gets for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Delete = 0,
    Update = 1,
    Insert = 2,
}

impl Net {
    /// `None`: inserted and deleted within the group, nothing to send.
    pub fn op(&self) -> Option<Op> {
        match (self.expects_row, &self.after) {
            (true, None) => Some(Op::Delete),
            (true, Some(_)) => Some(Op::Update),
            (false, Some(_)) => Some(Op::Insert),
            (false, None) => None,
        }
    }
}

/// A change that contradicts an earlier one of the same group: Firebird
/// never writes such a journal, so the journal or the table's key is not
/// what the follow took it for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    pub transaction: u64,
    pub kind: ChangeKind,
    pub key: Key,
}

/// One table's changes of a group, by key.
#[derive(Debug, Default)]
pub struct NetTable {
    pub keys: HashMap<Key, Net>,
    /// Bytes of row text held, for the memory budget.
    pub bytes: usize,
}

fn row_bytes(row: &Row) -> usize {
    row.iter()
        .map(|v| v.as_ref().map_or(1, |t| t.len() + 1))
        .sum()
}

impl NetTable {
    /// An insert of `row` under `key`.
    pub fn insert(&mut self, transaction: u64, key: Key, row: Row) -> Result<(), Contradiction> {
        self.put(transaction, ChangeKind::Insert, key, row, false, None)
    }

    /// An update that keeps the key; `changed`: the columns it changed,
    /// if known.
    pub fn update(
        &mut self,
        transaction: u64,
        key: Key,
        row: Row,
        changed: Option<Vec<bool>>,
    ) -> Result<(), Contradiction> {
        self.put(transaction, ChangeKind::Update, key, row, true, changed)
    }

    /// A key update: its old key goes, its new one comes.
    pub fn move_key(
        &mut self,
        transaction: u64,
        old: Key,
        new: Key,
        row: Row,
    ) -> Result<(), Contradiction> {
        self.remove(transaction, ChangeKind::Update, old)?;
        self.put(transaction, ChangeKind::Update, new, row, false, None)
    }

    pub fn delete(&mut self, transaction: u64, key: Key) -> Result<(), Contradiction> {
        self.remove(transaction, ChangeKind::Delete, key)
    }

    /// `row` under `key`; `needs_row`: the change finds a row there.
    fn put(
        &mut self,
        transaction: u64,
        kind: ChangeKind,
        key: Key,
        row: Row,
        needs_row: bool,
        changed: Option<Vec<bool>>,
    ) -> Result<(), Contradiction> {
        self.bytes += row_bytes(&row);
        match self.keys.get_mut(&key) {
            Some(net) if net.after.is_some() != needs_row => Err(Contradiction {
                transaction,
                kind,
                key,
            }),
            Some(net) => {
                // Updates after updates: what any of them changed. A row
                // inserted or put again in the group goes whole.
                net.changed = match (net.changed.take(), changed) {
                    (Some(mut was), Some(now)) if needs_row && net.expects_row => {
                        was.iter_mut().zip(now).for_each(|(w, n)| *w |= n);
                        Some(was)
                    }
                    _ => None,
                };
                net.after = Some(row);
                Ok(())
            }
            None => {
                self.first_met(
                    key,
                    Net {
                        expects_row: needs_row,
                        after: Some(row),
                        first: (transaction, kind),
                        changed: changed.filter(|_| needs_row),
                    },
                );
                Ok(())
            }
        }
    }

    fn remove(
        &mut self,
        transaction: u64,
        kind: ChangeKind,
        key: Key,
    ) -> Result<(), Contradiction> {
        match self.keys.get_mut(&key) {
            Some(net) if net.after.is_none() => Err(Contradiction {
                transaction,
                kind,
                key,
            }),
            Some(net) => {
                net.after = None;
                net.changed = None;
                Ok(())
            }
            None => {
                self.first_met(
                    key,
                    Net {
                        expects_row: true,
                        after: None,
                        first: (transaction, kind),
                        changed: None,
                    },
                );
                Ok(())
            }
        }
    }

    /// A key the group had not met: its bytes are held from now on.
    fn first_met(&mut self, key: Key, net: Net) {
        self.bytes += key.iter().map(|k| k.len() + 1).sum::<usize>();
        self.keys.insert(key, net);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: i32) -> Key {
        vec![n.to_string()]
    }

    fn r(n: i32, v: &str) -> Row {
        vec![Some(n.to_string()), Some(v.to_string())]
    }

    fn ops(t: &NetTable) -> Vec<(String, Option<Op>, Option<Row>)> {
        let mut out: Vec<_> = t
            .keys
            .iter()
            .map(|(key, net)| (key[0].clone(), net.op(), net.after.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn changes_to_one_key_come_to_their_net_effect() {
        let mut t = NetTable::default();
        // 1: inserted, updated, deleted, inserted again.
        t.insert(10, k(1), r(1, "a")).unwrap();
        t.update(11, k(1), r(1, "b"), None).unwrap();
        t.delete(12, k(1)).unwrap();
        t.insert(13, k(1), r(1, "c")).unwrap();
        // 2: existed, moved to 3; 4 existed and is deleted, then inserted.
        t.move_key(14, k(2), k(3), r(3, "moved")).unwrap();
        t.delete(15, k(4)).unwrap();
        t.insert(16, k(4), r(4, "back")).unwrap();
        // 5: inserted and deleted: nothing to send.
        t.insert(17, k(5), r(5, "x")).unwrap();
        t.delete(18, k(5)).unwrap();
        // 6: existed, updated twice.
        t.update(19, k(6), r(6, "y"), None).unwrap();
        t.update(20, k(6), r(6, "z"), None).unwrap();
        assert_eq!(
            ops(&t),
            vec![
                ("1".into(), Some(Op::Insert), Some(r(1, "c"))),
                ("2".into(), Some(Op::Delete), None),
                ("3".into(), Some(Op::Insert), Some(r(3, "moved"))),
                ("4".into(), Some(Op::Update), Some(r(4, "back"))),
                ("5".into(), None, None),
                ("6".into(), Some(Op::Update), Some(r(6, "z"))),
            ]
        );
        assert_eq!(t.keys[&k(2)].first, (14, ChangeKind::Update));
        assert_eq!(t.keys[&k(4)].first, (15, ChangeKind::Delete));
    }

    #[test]
    fn a_change_that_contradicts_an_earlier_one_is_refused() {
        let mut t = NetTable::default();
        t.insert(1, k(1), r(1, "a")).unwrap();
        assert_eq!(
            t.insert(2, k(1), r(1, "b")),
            Err(Contradiction {
                transaction: 2,
                kind: ChangeKind::Insert,
                key: k(1)
            })
        );
        t.delete(3, k(1)).unwrap();
        assert!(t.update(4, k(1), r(1, "c"), None).is_err());
        assert!(t.delete(5, k(1)).is_err());
        assert!(t.move_key(6, k(1), k(2), r(2, "d")).is_err());
    }

    #[test]
    fn updates_keep_the_columns_any_of_them_changed() {
        let mut t = NetTable::default();
        let some = |c: [bool; 2]| Some(c.to_vec());
        // 1: two updates, each of one column: both are set.
        t.update(1, k(1), r(1, "a"), some([false, true])).unwrap();
        t.update(2, k(1), r(1, "b"), some([true, false])).unwrap();
        assert_eq!(t.keys[&k(1)].changed, some([true, true]));
        // 2: one update whose columns are not known: every column.
        t.update(3, k(2), r(2, "a"), some([false, true])).unwrap();
        t.update(4, k(2), r(2, "b"), None).unwrap();
        assert_eq!(t.keys[&k(2)].changed, None);
        // 3: inserted, then updated: the insert goes whole.
        t.insert(5, k(3), r(3, "a")).unwrap();
        t.update(6, k(3), r(3, "b"), some([false, true])).unwrap();
        assert_eq!(t.keys[&k(3)].changed, None);
        // 4: deleted and put again, then updated: whole, as an UPDATE.
        t.delete(7, k(4)).unwrap();
        t.insert(8, k(4), r(4, "a")).unwrap();
        t.update(9, k(4), r(4, "b"), some([false, true])).unwrap();
        assert_eq!(t.keys[&k(4)].changed, None);
        assert_eq!(t.keys[&k(4)].op(), Some(Op::Update));
        // 5: updated, deleted and put again: whole.
        t.update(10, k(5), r(5, "a"), some([false, true])).unwrap();
        t.delete(11, k(5)).unwrap();
        t.insert(12, k(5), r(5, "b")).unwrap();
        assert_eq!(t.keys[&k(5)].changed, None);
        // 6: moved here: an insert, whole.
        t.move_key(13, k(7), k(6), r(6, "a")).unwrap();
        t.update(14, k(6), r(6, "b"), some([false, true])).unwrap();
        assert_eq!(t.keys[&k(6)].changed, None);
    }
}
