//! The event queue: events pop in order of (time, insertion sequence), so events at
//! equal times fire in the order they were scheduled (as in simcore/dslab).
//!
//! An entry is one `u128`: `time << 64 | seq << 32 | event`, with the event packed
//! into 32 bits ([`Packed`]) and a 32-bit insertion sequence. A comparison is one
//! integer comparison and an entry is 16 bytes. The sequence numbers are renumbered
//! (in order) before they would wrap, every 2^32 pushes. Four implementations with
//! the same interface were measured on whole runs (docs/performance.md);
//! [`EventQueue`] names the one in use, the others stay for the record and are
//! tested alike.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use aqm::Time;

/// An event that fits in 32 bits.
pub trait Packed: Copy {
    fn pack(self) -> u32;
    fn unpack(x: u32) -> Self;
    /// An event of which there are many pending and few due (one timer per flow):
    /// [`SplitQueue`] keeps these apart.
    fn is_timer(self) -> bool {
        false
    }
}

impl Packed for u32 {
    fn pack(self) -> u32 {
        self
    }
    fn unpack(x: u32) -> Self {
        x
    }
}

#[inline]
fn entry<E: Packed>(time: Time, seq: u32, ev: E) -> u128 {
    ((time.as_nanos() as u128) << 64) | ((seq as u128) << 32) | ev.pack() as u128
}

#[inline]
fn split<E: Packed>(k: u128) -> (Time, E) {
    (Time::from_nanos((k >> 64) as u64), E::unpack(k as u32))
}

/// Give `entries` (in pop order) sequence numbers 0, 1, 2...; returns the next one.
fn renumber(entries: &mut [u128]) -> u32 {
    for (i, k) in entries.iter_mut().enumerate() {
        *k = (*k >> 64 << 64) | ((i as u128) << 32) | (*k & 0xffff_ffff);
    }
    entries.len() as u32
}

/// The queue the simulator uses.
pub type EventQueue<E> = SplitQueue<E>;

macro_rules! queue_common {
    () => {
        pub fn len(&self) -> usize {
            self.len_()
        }
        pub fn is_empty(&self) -> bool {
            self.len_() == 0
        }
        pub fn push(&mut self, time: Time, ev: E) {
            if self.seq == u32::MAX {
                self.renumber();
            }
            let k = entry(time, self.seq, ev);
            self.seq += 1;
            self.insert(k);
        }
        pub fn pop(&mut self) -> Option<(Time, E)> {
            self.remove_min().map(split)
        }
        /// Take every entry out in order, renumber, and put them back.
        fn renumber(&mut self) {
            let mut all: Vec<u128> = std::iter::from_fn(|| self.remove_min()).collect();
            self.seq = renumber(&mut all);
            for k in all {
                self.insert(k);
            }
        }
    };
}

// ---- the standard library's binary heap -------------------------------------

/// `std::collections::BinaryHeap` of entries.
pub struct BinaryQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    seq: u32,
    _e: std::marker::PhantomData<E>,
}

impl<E> Default for BinaryQueue<E> {
    fn default() -> Self {
        BinaryQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, _e: Default::default() }
    }
}

impl<E: Packed> BinaryQueue<E> {
    queue_common!();
    fn len_(&self) -> usize {
        self.heap.len()
    }
    fn insert(&mut self, k: u128) {
        self.heap.push(Reverse(k));
    }
    fn remove_min(&mut self) -> Option<u128> {
        self.heap.pop().map(|r| r.0)
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        self.heap.peek().map(|r| Time::from_nanos((r.0 >> 64) as u64))
    }
}

// ---- two binary heaps: timers apart ----------------------------------------

/// Two binary heaps sharing one sequence counter: one for timers
/// ([`Packed::is_timer`]: a pending one per flow, most of them superseded or far
/// ahead), one for everything else (a pending event per busy link). The next event
/// is the smaller of the two tops; since both heaps draw their sequence numbers from
/// one counter, the order is exactly that of a single heap, while most pops work on
/// a heap of a few dozen entries instead of one with an entry per flow.
pub struct SplitQueue<E> {
    main: BinaryHeap<Reverse<u128>>,
    timers: BinaryHeap<Reverse<u128>>,
    seq: u32,
    _e: std::marker::PhantomData<E>,
}

impl<E> Default for SplitQueue<E> {
    fn default() -> Self {
        SplitQueue { main: BinaryHeap::with_capacity(1024), timers: BinaryHeap::with_capacity(1024), seq: 0, _e: Default::default() }
    }
}

impl<E: Packed> SplitQueue<E> {
    pub fn len(&self) -> usize {
        self.main.len() + self.timers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn push(&mut self, time: Time, ev: E) {
        if self.seq == u32::MAX {
            self.renumber();
        }
        let k = entry(time, self.seq, ev);
        self.seq += 1;
        self.insert(k);
    }
    fn insert(&mut self, k: u128) {
        if E::unpack(k as u32).is_timer() {
            self.timers.push(Reverse(k));
        } else {
            self.main.push(Reverse(k));
        }
    }
    #[inline]
    fn remove_min(&mut self) -> Option<u128> {
        let heap = match (self.main.peek(), self.timers.peek()) {
            (Some(a), Some(b)) => if a.0 < b.0 { &mut self.main } else { &mut self.timers },
            (Some(_), None) => &mut self.main,
            (None, _) => &mut self.timers,
        };
        heap.pop().map(|r| r.0)
    }
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.remove_min().map(split)
    }
    fn renumber(&mut self) {
        let mut all: Vec<u128> = std::iter::from_fn(|| self.remove_min()).collect();
        self.seq = renumber(&mut all);
        for k in all {
            self.insert(k);
        }
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        let a = self.main.peek().map(|r| r.0);
        let b = self.timers.peek().map(|r| r.0);
        let k = match (a, b) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(Time::from_nanos((k >> 64) as u64))
    }
}

// ---- a 4-ary heap -----------------------------------------------------------

/// An implicit 4-ary min-heap: half the depth of a binary heap, and the four
/// children of a node (64 bytes) share a cache line.
pub struct QuadQueue<E> {
    keys: Vec<u128>,
    seq: u32,
    _e: std::marker::PhantomData<E>,
}

impl<E> Default for QuadQueue<E> {
    fn default() -> Self {
        QuadQueue { keys: Vec::with_capacity(1024), seq: 0, _e: Default::default() }
    }
}

impl<E: Packed> QuadQueue<E> {
    queue_common!();
    fn len_(&self) -> usize {
        self.keys.len()
    }
    fn insert(&mut self, k: u128) {
        let mut i = self.keys.len();
        self.keys.push(k);
        while i > 0 {
            let p = (i - 1) / 4;
            if self.keys[p] <= k {
                break;
            }
            self.keys[i] = self.keys[p];
            i = p;
        }
        self.keys[i] = k;
    }
    fn remove_min(&mut self) -> Option<u128> {
        let last = self.keys.pop()?;
        let n = self.keys.len();
        if n == 0 {
            return Some(last);
        }
        let top = self.keys[0];
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let end = (c + 4).min(n);
            let mut m = c;
            for j in c + 1..end {
                if self.keys[j] < self.keys[m] {
                    m = j;
                }
            }
            if self.keys[m] >= last {
                break;
            }
            self.keys[i] = self.keys[m];
            i = m;
        }
        self.keys[i] = last;
        Some(top)
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        self.keys.first().map(|&k| Time::from_nanos((k >> 64) as u64))
    }
}

// ---- a radix heap -----------------------------------------------------------

/// A radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster algorithms for the
/// shortest path problem", J. ACM 1990), which needs only that keys never go below
/// the last key popped: true of a simulation clock. Bucket `b` holds the keys whose
/// highest bit differing from the last popped key is bit `b - 1` (bucket 0: equal).
/// A push is an append; a pop empties the lowest non-empty bucket into lower ones,
/// and each entry moves down at most once per bit.
pub struct RadixQueue<E> {
    buckets: Vec<Vec<u128>>,
    /// Bit `b` set when bucket `b` is non-empty.
    nonempty: [u64; 3],
    last: u128,
    len: usize,
    seq: u32,
    _e: std::marker::PhantomData<E>,
}

impl<E> Default for RadixQueue<E> {
    fn default() -> Self {
        RadixQueue { buckets: (0..129).map(|_| Vec::new()).collect(), nonempty: [0; 3], last: 0, len: 0, seq: 0, _e: Default::default() }
    }
}

impl<E: Packed> RadixQueue<E> {
    queue_common!();
    fn len_(&self) -> usize {
        self.len
    }
    #[inline]
    fn put(&mut self, k: u128) {
        let b = (128 - (k ^ self.last).leading_zeros()) as usize;
        self.buckets[b].push(k);
        self.nonempty[b / 64] |= 1 << (b % 64);
    }
    fn insert(&mut self, k: u128) {
        // renumbering can lower a key below `last`: start afresh from the smallest
        if k < self.last {
            self.last = 0;
            let all: Vec<u128> = self.buckets.iter_mut().flat_map(std::mem::take).collect();
            self.nonempty = [0; 3];
            for x in all {
                self.put(x);
            }
        }
        self.len += 1;
        self.put(k);
    }
    /// Make bucket 0 hold the smallest key.
    fn settle(&mut self) -> bool {
        let Some(b) = self.nonempty.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as usize) else {
            return false;
        };
        if b == 0 {
            return true;
        }
        let mut items = std::mem::take(&mut self.buckets[b]);
        self.nonempty[b / 64] &= !(1 << (b % 64));
        self.last = *items.iter().min().unwrap();
        for k in items.drain(..) {
            self.put(k);
        }
        self.buckets[b] = items; // keep the allocation
        true
    }
    fn remove_min(&mut self) -> Option<u128> {
        if !self.settle() {
            return None;
        }
        // keys are unique (the sequence number), so bucket 0 holds exactly one
        let k = self.buckets[0].pop().unwrap();
        self.nonempty[0] &= !1;
        self.len -= 1;
        Some(k)
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.settle() {
            return None;
        }
        Some(Time::from_nanos((self.buckets[0][0] >> 64) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Interleaved pushes and pops, every push at or after the last time popped
    /// (as in a simulation): the pops come out in (time, push order).
    fn check<Q>(ops: &[(bool, u64)], mut push: impl FnMut(&mut Q, Time, u32), mut pop: impl FnMut(&mut Q) -> Option<(Time, u32)>, q: &mut Q) -> Result<(), TestCaseError> {
        let mut model: Vec<(u64, u32)> = Vec::new();
        let mut now = 0u64;
        for (i, &(is_pop, dt)) in ops.iter().enumerate() {
            if is_pop {
                model.sort();
                let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                let got = pop(q).map(|(t, e)| (t.as_nanos(), e));
                prop_assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            } else {
                push(q, Time::from_nanos(now + dt), i as u32);
                model.push((now + dt, i as u32));
            }
        }
        model.sort();
        for want in model {
            prop_assert_eq!(pop(q).map(|(t, e)| (t.as_nanos(), e)), Some(want));
        }
        prop_assert!(pop(q).is_none());
        Ok(())
    }

    #[derive(Clone, Copy)]
    struct Odd(u32);
    impl Packed for Odd {
        fn pack(self) -> u32 {
            self.0
        }
        fn unpack(x: u32) -> Self {
            Odd(x)
        }
        fn is_timer(self) -> bool {
            self.0 % 2 == 1
        }
    }

    fn ops() -> impl Strategy<Value = Vec<(bool, u64)>> {
        // small time offsets make many ties; a few large ones exercise high bits
        proptest::collection::vec((any::<bool>(), prop_oneof![0u64..20, 0u64..(1 << 40)]), 1..300)
    }

    proptest! {
        #[test]
        fn binary_pops_in_time_then_scheduling_order(ops in ops()) {
            check(&ops, |q: &mut BinaryQueue<u32>, t, e| q.push(t, e), |q| q.pop(), &mut BinaryQueue::default())?;
        }

        #[test]
        fn quad_pops_in_time_then_scheduling_order(ops in ops()) {
            check(&ops, |q: &mut QuadQueue<u32>, t, e| q.push(t, e), |q| q.pop(), &mut QuadQueue::default())?;
        }

        #[test]
        fn split_pops_in_time_then_scheduling_order(ops in ops()) {
            // `Odd` events count as timers: both heaps in use
            check(&ops, |q: &mut SplitQueue<Odd>, t, e| q.push(t, Odd(e)), |q| q.pop().map(|(t, e)| (t, e.0)), &mut SplitQueue::default())?;
        }

        #[test]
        fn radix_pops_in_time_then_scheduling_order(ops in ops()) {
            check(&ops, |q: &mut RadixQueue<u32>, t, e| q.push(t, e), |q| q.pop(), &mut RadixQueue::default())?;
        }

        #[test]
        fn renumbering_keeps_the_order(times in proptest::collection::vec(0u64..20, 1..100), cut in 0usize..100) {
            // start near the wrap of the 32-bit sequence, so that it renumbers mid-way
            let mut qs: (BinaryQueue<u32>, QuadQueue<u32>, RadixQueue<u32>, SplitQueue<Odd>) = Default::default();
            let start = u32::MAX - cut.min(times.len()) as u32;
            qs.0.seq = start;
            qs.1.seq = start;
            qs.2.seq = start;
            qs.3.seq = start;
            for (i, t) in times.iter().enumerate() {
                qs.0.push(Time::from_nanos(*t), i as u32);
                qs.1.push(Time::from_nanos(*t), i as u32);
                qs.2.push(Time::from_nanos(*t), i as u32);
                qs.3.push(Time::from_nanos(*t), Odd(i as u32));
            }
            let mut expect: Vec<(u64, u32)> = times.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
            expect.sort();
            let got0: Vec<(u64, u32)> = std::iter::from_fn(|| qs.0.pop()).map(|(t, i)| (t.as_nanos(), i)).collect();
            let got1: Vec<(u64, u32)> = std::iter::from_fn(|| qs.1.pop()).map(|(t, i)| (t.as_nanos(), i)).collect();
            let got2: Vec<(u64, u32)> = std::iter::from_fn(|| qs.2.pop()).map(|(t, i)| (t.as_nanos(), i)).collect();
            prop_assert_eq!(&got0, &expect);
            prop_assert_eq!(&got1, &expect);
            prop_assert_eq!(&got2, &expect);
            let got3: Vec<(u64, u32)> = std::iter::from_fn(|| qs.3.pop()).map(|(t, i)| (t.as_nanos(), i.0)).collect();
            prop_assert_eq!(&got3, &expect);
        }

        #[test]
        fn pops_in_time_then_scheduling_order(times in proptest::collection::vec(0u64..20, 1..200)) {
            let mut q = EventQueue::default();
            for (i, t) in times.iter().enumerate() {
                q.push(Time::from_nanos(*t), i as u32);
            }
            let mut expect: Vec<(u64, u32)> = times.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
            expect.sort();
            let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop()).map(|(t, i)| (t.as_nanos(), i)).collect();
            prop_assert_eq!(got, expect);
        }
    }
}
