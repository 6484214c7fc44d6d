//! The event queue: events pop in order of (time, event, insertion sequence). At
//! equal times the order is fixed by the events themselves ([`Packed::pack`]: the
//! simulator's kinds in a stated order, then link or flow index), not by when they
//! were scheduled, so that a run does not depend on which intermediate events the
//! engine happens to use: the eager DropTail links (link.rs) schedule fewer events
//! and give the same run bit for bit. Identical events at one time pop in the order
//! they were scheduled.
//!
//! An entry is one `u128`: `time << 64 | event << 32 | seq`, with the event packed
//! into 32 bits ([`Packed`]) and a 32-bit insertion sequence. A comparison is one
//! integer comparison and an entry is 16 bytes. The sequence numbers are renumbered
//! (in order) before they would wrap, every 2^32 pushes. A 4-ary heap and a radix
//! heap with the same interface were measured against the standard library's binary
//! heap on whole runs and lost (docs/performance.md; their code is in the history,
//! commit c5e68c6). [`EventQueue`] names the queue in use: [`SplitQueue`], two binary
//! heaps; [`BinaryQueue`] is the single heap it must behave exactly like.

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
pub(crate) fn entry<E: Packed>(time: Time, seq: u32, ev: E) -> u128 {
    ((time.as_nanos() as u128) << 64) | ((ev.pack() as u128) << 32) | seq as u128
}

#[inline]
fn split<E: Packed>(k: u128) -> (Time, E) {
    (Time::from_nanos((k >> 64) as u64), E::unpack((k >> 32) as u32))
}

/// Give `entries` (in pop order) sequence numbers 0, 1, 2...; returns the next one.
fn renumber(entries: &mut [u128]) -> u32 {
    for (i, k) in entries.iter_mut().enumerate() {
        *k = (*k >> 32 << 32) | i as u128;
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
            // the event's kind is known here: no unpacking to find its heap
            self.insert(k, ev.is_timer());
        }
        pub fn pop(&mut self) -> Option<(Time, E)> {
            self.remove_min().map(split)
        }
        /// `pop`, with the event still packed.
        #[inline]
        pub fn pop_packed(&mut self) -> Option<(Time, u32)> {
            self.remove_min().map(|k| (Time::from_nanos((k >> 64) as u64), (k >> 32) as u32))
        }
        /// Take every entry out in order, renumber, and put them back.
        fn renumber(&mut self) {
            let mut all: Vec<u128> = std::iter::from_fn(|| self.remove_min()).collect();
            self.seq = renumber(&mut all);
            for k in all {
                self.insert(k, split::<E>(k).1.is_timer());
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
    fn insert(&mut self, k: u128, _timer: bool) {
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
    queue_common!();
    fn len_(&self) -> usize {
        self.main.len() + self.timers.len()
    }
    #[inline]
    fn insert(&mut self, k: u128, timer: bool) {
        if timer {
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
    /// The next entry's key (time, event, sequence), if any.
    #[inline]
    pub fn peek_key(&self) -> Option<u128> {
        let a = self.main.peek().map(|r| r.0);
        let b = self.timers.peek().map(|r| r.0);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    pub fn peek_time(&mut self) -> Option<Time> {
        self.peek_key().map(|k| Time::from_nanos((k >> 64) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Interleaved pushes and pops, every push at or after the last time popped
    /// (as in a simulation): the pops come out in (time, event, push order). The
    /// events here are the push indices, so (time, event) is (time, push order).
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

    /// Both queues pop exactly `expect` (time, event), then nothing.
    fn drain_both(qs: &mut (BinaryQueue<u32>, SplitQueue<Odd>), expect: &[(u64, u32)]) -> Result<(), TestCaseError> {
        let got0: Vec<(u64, u32)> = std::iter::from_fn(|| qs.0.pop()).map(|(t, e)| (t.as_nanos(), e)).collect();
        prop_assert_eq!(&got0[..], expect);
        let got1: Vec<(u64, u32)> = std::iter::from_fn(|| qs.1.pop()).map(|(t, e)| (t.as_nanos(), e.0)).collect();
        prop_assert_eq!(&got1[..], expect);
        Ok(())
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
        fn split_pops_in_time_then_scheduling_order(ops in ops()) {
            // `Odd` events count as timers: both heaps in use
            check(&ops, |q: &mut SplitQueue<Odd>, t, e| q.push(t, Odd(e)), |q| q.pop().map(|(t, e)| (t, e.0)), &mut SplitQueue::default())?;
        }

        #[test]
        fn renumbering_keeps_the_order(times in proptest::collection::vec(0u64..20, 1..100), cut in 0usize..100) {
            // start near the wrap of the 32-bit sequence, so that it renumbers mid-way
            let mut qs: (BinaryQueue<u32>, SplitQueue<Odd>) = Default::default();
            let start = u32::MAX - cut.min(times.len()) as u32;
            qs.0.seq = start;
            qs.1.seq = start;
            for (i, t) in times.iter().enumerate() {
                qs.0.push(Time::from_nanos(*t), i as u32);
                qs.1.push(Time::from_nanos(*t), Odd(i as u32));
            }
            let mut expect: Vec<(u64, u32)> = times.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
            expect.sort();
            drain_both(&mut qs, &expect)?;
        }

        #[test]
        fn equal_times_pop_in_event_order_whatever_the_scheduling_order(evs in proptest::collection::vec((0u64..4, 0u32..6), 1..100)) {
            // pushed in the given order; popped by (time, event), ties of identical
            // events in push order (the model's stable sort)
            let mut qs: (BinaryQueue<u32>, SplitQueue<Odd>) = Default::default();
            for &(t, e) in &evs {
                qs.0.push(Time::from_nanos(t), e);
                qs.1.push(Time::from_nanos(t), Odd(e));
            }
            let mut expect = evs.clone();
            expect.sort();
            drain_both(&mut qs, &expect)?;
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
