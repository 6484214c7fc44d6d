//! The engine: simulated time, the event queue and the loop. It knows nothing of
//! links, hosts or applications: a component says when it next needs to run (an
//! event at a time, or a *slot*: a standing wake-up time it moves as its state
//! changes, smoltcp's `poll_at`), and the engine calls the model back at that time
//! ([`Model::handle`]). Everything else is the model's business.
//!
//! Order. Events fire in order of their key: time, then the packed event
//! ([`Packed::pack`]: the model states the order of its kinds at equal times, and
//! within a kind the component index), then the order they were scheduled. A run
//! therefore does not depend on which intermediate events the model happens to
//! use, only on what the events are.
//!
//! Slots. A component that moves its wake-up time often (a link's deadline, the
//! head of a propagation pipe) holds a slot instead of pushing an event at each
//! move. With few slots ([`SLOTS_APART`]) their times are kept in an array beside
//! the heap and the next event is the smaller of the heap's top and the earliest
//! slot; with more, a slot's time is pushed into the heap when it moves earlier and
//! stale entries are skipped when they come out. Either way a slot fires in its
//! key's place, exactly as an event would.

use aqm::Time;

use crate::event::{entry, EventQueue, Packed};

/// Up to this many slots, their times are kept apart from the heap.
pub const SLOTS_APART: usize = 32;

/// The order of an event, without its insertion sequence: `time << 64 | event << 32`.
pub type Key = u128;

/// The key of event `ev` at `t`.
#[inline]
pub fn key<E: Packed>(t: Time, ev: E) -> Key {
    entry(t, 0, ev)
}

/// The time of a key.
#[inline]
pub fn key_time(k: Key) -> Time {
    Time::from_nanos((k >> 64) as u64)
}

/// The packed event of a key.
#[inline]
pub fn key_event(k: Key) -> u32 {
    (k >> 32) as u32
}

/// What the engine runs.
pub trait Model<E: Packed> {
    /// Event `ev` (packed) is due at `eng.now()`. A slot's event comes with the slot
    /// already cleared.
    fn handle(&mut self, eng: &mut Engine<E>, ev: u32);
}

struct Slots {
    /// Each slot's time in ns (`u64::MAX`: none) and its packed event.
    due: Vec<u64>,
    ev: Vec<u32>,
    /// The slots are kept apart from the heap (few of them).
    apart: bool,
    /// Apart: the smallest key and its slot, unless `stale`.
    min_key: u128,
    min_slot: usize,
    stale: bool,
    /// In the heap: the time of the entry pushed for each slot (`u64::MAX`: none).
    pushed: Vec<u64>,
}

pub struct Engine<E: Packed> {
    now: Time,
    queue: EventQueue<E>,
    slots: Slots,
    /// The slot of a packed event (`tag << 28 | index`): `slot_map[tag][index]`
    /// (`u32::MAX`: not a slot).
    slot_map: [Vec<u32>; 16],
    events: u64,
}

impl<E: Packed> Default for Engine<E> {
    fn default() -> Self {
        Engine {
            now: Time::ZERO,
            queue: EventQueue::default(),
            slots: Slots { due: Vec::new(), ev: Vec::new(), apart: true, min_key: u128::MAX, min_slot: 0, stale: false, pushed: Vec::new() },
            slot_map: Default::default(),
            events: 0,
        }
    }
}

impl<E: Packed> Engine<E> {
    /// Add a slot that fires as event `ev` (packed as `tag << 28 | index`, unique);
    /// returns its number (slots are numbered in the order they are added). Add
    /// every slot before the run starts.
    pub fn add_slot(&mut self, ev: E) -> usize {
        let s = &mut self.slots;
        let v = ev.pack();
        let (tag, idx) = ((v >> 28) as usize, (v & 0x0fff_ffff) as usize);
        let m = &mut self.slot_map[tag];
        if m.len() <= idx {
            m.resize(idx + 1, u32::MAX);
        }
        assert_eq!(m[idx], u32::MAX, "one slot per event");
        m[idx] = s.due.len() as u32;
        s.due.push(u64::MAX);
        s.ev.push(v);
        s.pushed.push(u64::MAX);
        s.apart = s.due.len() <= SLOTS_APART;
        s.due.len() - 1
    }

    /// The slot of packed event `v`, if it is one.
    #[inline]
    fn slot_of(&self, v: u32) -> Option<usize> {
        match self.slot_map[(v >> 28) as usize].get((v & 0x0fff_ffff) as usize) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }

    /// Keep slots in the heap whatever their number (for tests that show both ways
    /// give the same run).
    #[doc(hidden)]
    pub fn slots_in_heap(&mut self) {
        self.slots.apart = false;
    }

    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The key of the event being handled (`ev` is what `handle` was given).
    #[inline]
    pub fn key_of(&self, ev: u32) -> Key {
        ((self.now.as_nanos() as u128) << 64) | ((ev as u128) << 32)
    }

    pub fn schedule(&mut self, at: Time, ev: E) {
        debug_assert!(at >= self.now, "no event in the past");
        self.queue.push(at, ev);
    }

    /// A slot's time (None: not set).
    #[inline]
    pub fn slot(&self, i: usize) -> Option<Time> {
        let d = self.slots.due[i];
        (d != u64::MAX).then(|| Time::from_nanos(d))
    }

    /// Set slot `i` to fire at `t` (no earlier than now), or clear it (`None`).
    #[inline]
    pub fn set_slot(&mut self, i: usize, t: Option<Time>) {
        let s = &mut self.slots;
        let new = t.map_or(u64::MAX, |t| t.as_nanos());
        let old = s.due[i];
        if new == old {
            return;
        }
        debug_assert!(new >= self.now.as_nanos());
        s.due[i] = new;
        if s.apart {
            if new < old {
                let k = ((new as u128) << 64) | ((s.ev[i] as u128) << 32);
                if !s.stale && k < s.min_key {
                    s.min_key = k;
                    s.min_slot = i;
                }
            } else if !s.stale && s.min_slot == i && old != u64::MAX && ((old as u128) << 64 | (s.ev[i] as u128) << 32) == s.min_key {
                // the earliest slot moved later: find the earliest again
                s.stale = true;
            }
        } else if new < s.pushed[i] {
            s.pushed[i] = new;
            self.queue.push(Time::from_nanos(new), E::unpack(s.ev[i]));
        }
    }

    /// The next event due at or before `until`, taken out: (time, packed event).
    #[inline]
    fn next(&mut self, until: Time) -> Option<(Time, u32)> {
        loop {
            let hk = self.queue.peek_key().unwrap_or(u128::MAX);
            let s = &mut self.slots;
            if s.apart {
                if s.stale {
                    // the earliest (time, event), compared as two words
                    let (mut bd, mut be, mut at) = (u64::MAX, u32::MAX, 0);
                    for (i, (&d, &e)) in s.due.iter().zip(&s.ev).enumerate() {
                        if d < bd || (d == bd && e < be) {
                            (bd, be, at) = (d, e, i);
                        }
                    }
                    s.min_key = if bd == u64::MAX { u128::MAX } else { ((bd as u128) << 64) | ((be as u128) << 32) };
                    s.min_slot = at;
                    s.stale = false;
                }
                let sk = s.min_key;
                let k = hk.min(sk);
                if k == u128::MAX || (k >> 64) as u64 > until.as_nanos() {
                    return None;
                }
                if sk < hk {
                    let ev = key_event(sk);
                    let i = s.min_slot;
                    s.due[i] = u64::MAX;
                    s.stale = true;
                    return Some((key_time(sk), ev));
                }
                return self.queue.pop_packed();
            }
            if hk == u128::MAX || (hk >> 64) as u64 > until.as_nanos() {
                return None;
            }
            let (t, ev) = self.queue.pop_packed().expect("a top");
            let Some(i) = self.slot_of(ev) else { return Some((t, ev)) };
            // a slot's entry: fire it if it is still the slot's time
            let s = &mut self.slots;
            if s.pushed[i] == t.as_nanos() {
                s.pushed[i] = u64::MAX;
            }
            match s.due[i] {
                d if d == t.as_nanos() => {
                    s.due[i] = u64::MAX;
                    return Some((t, ev));
                }
                d if d != u64::MAX && s.pushed[i] == u64::MAX => {
                    // moved later since: its entry goes back in at its time
                    s.pushed[i] = d;
                    self.queue.push(Time::from_nanos(d), E::unpack(ev));
                }
                _ => {}
            }
        }
    }

    /// Handle every event due at or before `until`, in order. `progress` gets the
    /// fraction of `until` reached about every 1 % and returns `false` to stop
    /// (then `run` returns `false`).
    pub fn run<M: Model<E>>(&mut self, model: &mut M, until: Time, progress: &mut dyn FnMut(f64) -> bool) -> bool {
        let step = (until.as_nanos() / 100).max(1);
        let mut next_report = self.now.as_nanos() / step * step + step;
        while let Some((t, ev)) = self.next(until) {
            self.now = t;
            self.events += 1;
            if t.as_nanos() >= next_report {
                if !progress(t.as_nanos() as f64 / until.as_nanos().max(1) as f64) {
                    return false;
                }
                next_report = (t.as_nanos() / step + 1) * step;
            }
            model.handle(self, ev);
        }
        self.now = self.now.max(until);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Test events: tag 1 = a slot (index in the low bits), tag 2 = a plain event.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Ev {
        Slot(u32),
        Plain(u32),
    }
    impl Packed for Ev {
        fn pack(self) -> u32 {
            match self {
                Ev::Slot(i) => 1 << 28 | i,
                Ev::Plain(i) => 2 << 28 | i,
            }
        }
        fn unpack(x: u32) -> Self {
            if x >> 28 == 1 { Ev::Slot(x & 0xfff_ffff) } else { Ev::Plain(x & 0xfff_ffff) }
        }
    }

    /// A model that records what fires and, when a slot fires, moves slots as told.
    struct Rec {
        fired: Vec<(u64, Ev)>,
        /// On the k-th firing: set slot i to now + dt (or clear it).
        plan: Vec<(usize, Option<u64>)>,
    }
    impl Model<Ev> for Rec {
        fn handle(&mut self, eng: &mut Engine<Ev>, ev: u32) {
            let now = eng.now().as_nanos();
            self.fired.push((now, Ev::unpack(ev)));
            if let Some(&(i, dt)) = self.plan.get(self.fired.len() - 1) {
                eng.set_slot(i, dt.map(|d| Time::from_nanos(now + d)));
            }
        }
    }

    fn run(apart: bool, slots: usize, initial: &[(usize, u64)], plain: &[(u64, u32)], plan: &[(usize, Option<u64>)]) -> Vec<(u64, Ev)> {
        let mut eng: Engine<Ev> = Engine::default();
        for i in 0..slots {
            eng.add_slot(Ev::Slot(i as u32));
        }
        if !apart {
            eng.slots_in_heap();
        }
        for &(i, t) in initial {
            eng.set_slot(i, Some(Time::from_nanos(t)));
        }
        for &(t, x) in plain {
            eng.schedule(Time::from_nanos(t), Ev::Plain(x));
        }
        let mut m = Rec { fired: Vec::new(), plan: plan.to_vec() };
        eng.run(&mut m, Time::from_nanos(1_000), &mut |_| true);
        m.fired
    }

    #[test]
    fn slots_and_events_fire_in_key_order() {
        // slot 1 at 5, slot 0 at 5, event at 5: slots (tag 1) first, by index
        let got = run(true, 2, &[(1, 5), (0, 5)], &[(5, 0), (3, 7)], &[]);
        assert_eq!(got, vec![(3, Ev::Plain(7)), (5, Ev::Slot(0)), (5, Ev::Slot(1)), (5, Ev::Plain(0))]);
    }

    #[test]
    fn a_slot_moved_later_fires_once_at_its_new_time() {
        // the first firing (the plain event at 1) moves slot 0 from 5 to 1 + 9 = 10
        let plan = [(0, Some(9))];
        for apart in [true, false] {
            let got = run(apart, 1, &[(0, 5)], &[(1, 0)], &plan);
            assert_eq!(got, vec![(1, Ev::Plain(0)), (10, Ev::Slot(0))], "apart = {apart}");
        }
    }

    proptest! {
        /// Whatever the moves, slots kept apart and slots in the heap give the same
        /// firings, and nothing fires after `until` or out of order.
        #[test]
        fn apart_and_in_heap_fire_alike(
            initial in proptest::collection::vec((0usize..4, 0u64..50), 0..6),
            plain in proptest::collection::vec((0u64..50, 0u32..3), 0..6),
            plan in proptest::collection::vec((0usize..4, proptest::option::of(0u64..30)), 0..40),
        ) {
            let a = run(true, 4, &initial, &plain, &plan);
            let b = run(false, 4, &initial, &plain, &plan);
            prop_assert_eq!(&a, &b);
            prop_assert!(a.windows(2).all(|w| w[0].0 <= w[1].0));
        }
    }
}
