//! Eager DropTail links. A FIFO that refuses only on overflow has no decision to
//! take later than the arrival, so the arrival books the packet's whole passage at
//! once — refused, or transmission start `max(arrival, end of the previous
//! transmission)`, end — with no queue object and no operations. If such a link's
//! only input is one other link (or one host), the network books a packet through
//! it as soon as the packet leaves that input: its arrival time is then known and
//! no earlier arrival can still come.
//!
//! A sampled link's counters and backlog are *settled* lazily: each booking is kept
//! until its time has come, so that the per-interval samples see exactly what
//! happened up to their time; an unsampled link, read only at the end of the run,
//! counts each packet when it books it. At equal times a transmission start
//! precedes an arrival (the departing packet no longer counts toward the buffer),
//! and a sample precedes both.

use std::collections::VecDeque;

use aqm::{Backlog, QPacket, Stats, Time};

use super::Link;

/// An eager link's arrival into its counters: refused on overflow, or enqueued.
#[inline]
fn count_arrival(st: &mut Stats, refused: bool, size: u32, ecn: u8) {
    st.arrivals += 1;
    st.ecn_arrived[ecn as usize] += 1;
    if refused {
        st.drops[aqm::Cause::Overflow.index()] += 1;
    } else {
        st.enqueued += 1;
        st.bytes_enqueued += size as u64;
    }
}

/// One booked passage through an eager link.
#[derive(Clone, Copy, Debug)]
struct Booked {
    arrive: Time,
    /// Transmission start (for a refused packet: when it would have started, which
    /// keeps `start` non-decreasing along the book).
    start: Time,
    end: Time,
    size: u32,
    /// The packet's ECN codepoint ([`aqm::Ecn::index`]): DropTail never marks, so
    /// it leaves as it came.
    ecn: u8,
    refused: bool,
    /// Admitted packets and bytes booked before this one.
    before: (u64, u64),
}

/// The state of an eagerly run DropTail link.
#[derive(Debug, Default)]
pub struct Eager {
    /// Bookings not yet settled, in arrival order.
    book: VecDeque<Booked>,
    /// Entries at the front of `book` whose arrival the counters already hold.
    arrived: usize,
    /// Entries at the front of `book` that had started by the last booked arrival
    /// (the rest wait behind the transmitter then): the next booking's backlog
    /// starts here.
    started: usize,
    /// The end of the last booked transmission.
    horizon: Time,
    /// Admitted packets and bytes booked since the start.
    total: (u64, u64),
    /// Arrived (settled) and not yet started: the queue at the last settlement.
    queued: Backlog,
    last_arrive: Time,
    /// Only a sampled link keeps the book; an unsampled one (whose counters are read
    /// at the end of the run only) counts each packet when it books it, up to
    /// `run_end`, and keeps just the transmission starts still ahead, to know its
    /// backlog.
    unbooked: Option<Unbooked>,
}

#[derive(Debug)]
struct Unbooked {
    run_end: Time,
    /// (start, size) of admitted packets that waited at their arrival, oldest
    /// first; those that had started by the last booked arrival are gone.
    ahead: VecDeque<(Time, u32)>,
    ahead_bytes: u64,
}

impl Eager {
    /// Bookings not yet settled.
    pub fn booked(&self) -> usize {
        self.book.len()
    }

    /// What the queue holds: as of the last settlement, or (unbooked) what has not
    /// started by the end of the run.
    pub(super) fn backlog(&self, s: &Stats) -> Backlog {
        match self.unbooked {
            Some(_) => Backlog { packets: s.enqueued - s.dequeued, bytes: s.bytes_enqueued - s.bytes_dequeued },
            None => self.queued,
        }
    }
}

impl<P: QPacket> Link<P> {
    /// Run this link eagerly; `run_end` is the end of the run (an unsampled link
    /// counts a packet as sent when it starts by then).
    pub fn make_eager(&mut self, run_end: Time) {
        debug_assert!(self.can_be_eager());
        let unbooked = (!self.sampled).then(|| Unbooked { run_end, ahead: VecDeque::new(), ahead_bytes: 0 });
        self.eager = Some(Box::new(Eager { unbooked, ..Default::default() }));
    }

    /// Bookings not yet settled (an eager link).
    pub fn booked(&self) -> usize {
        self.eager.as_ref().map_or(0, |e| e.booked())
    }

    /// Book a packet of `size` bytes arriving at `at` (no earlier than any booked
    /// arrival) on an eager link. DropTail's rule on the backlog at `at` (the
    /// admitted packets whose transmission has not started by then): `Ok((start,
    /// end))` of its transmission, or `Err(backlog bytes)` if refused.
    #[inline]
    pub fn book(&mut self, at: Time, size: u32, ecn: aqm::Ecn) -> Result<(Time, Time), u64> {
        let ecn = ecn.index() as u8;
        let e = self.eager.as_deref_mut().expect("an eager link");
        debug_assert!(at >= e.last_arrive, "arrivals at an eager link are booked in time order");
        e.last_arrive = at;
        let backlog = match &mut e.unbooked {
            Some(u) => {
                while let Some(&(_, size)) = u.ahead.front().filter(|a| a.0 <= at) {
                    u.ahead.pop_front();
                    u.ahead_bytes -= size as u64;
                }
                Backlog { packets: u.ahead.len() as u64, bytes: u.ahead_bytes }
            }
            None => {
                // arrivals come in time order, so the first entry still waiting moves forward
                let mut i = e.started;
                while e.book.get(i).is_some_and(|b| b.start <= at) {
                    i += 1;
                }
                e.started = i;
                e.book.get(i).map_or(Backlog::default(), |b| Backlog { packets: e.total.0 - b.before.0, bytes: e.total.1 - b.before.1 })
            }
        };
        let (start, before) = (at.max(e.horizon), e.total);
        let refused = self.limit.overflows(backlog, size);
        let end = if refused { start } else { start + self.tx_duration(size) };
        let e = self.eager.as_deref_mut().expect("an eager link");
        if let Some(u) = &mut e.unbooked {
            let st = &mut self.qdisc.stats;
            count_arrival(st, refused, size, ecn);
            if refused {
                return Err(backlog.bytes);
            }
            if start <= u.run_end {
                st.ecn_dequeued[ecn as usize] += 1;
                st.dequeued += 1;
                st.bytes_dequeued += size as u64;
            }
            if start > at {
                // it waits: later arrivals before its start see it in the buffer
                u.ahead.push_back((start, size));
                u.ahead_bytes += size as u64;
            }
            e.horizon = end;
            return Ok((start, end));
        }
        e.book.push_back(Booked { arrive: at, start, end, size, ecn, refused, before });
        if refused {
            return Err(backlog.bytes);
        }
        e.horizon = end;
        e.total.0 += 1;
        e.total.1 += size as u64;
        Ok((start, end))
    }

    /// Bring an eager link's counters, backlog and transmitter up to `t` inclusive:
    /// arrivals (admitted or refused) at or before `t` are counted, and
    /// transmissions that started at or before `t` leave the queue. Other links
    /// have nothing to settle.
    pub fn settle(&mut self, t: Time) {
        let Some(e) = self.eager.as_deref_mut() else { return };
        let st = &mut self.qdisc.stats;
        while let Some(b) = e.book.get(e.arrived).filter(|b| b.arrive <= t) {
            count_arrival(st, b.refused, b.size, b.ecn);
            if !b.refused {
                e.queued.packets += 1;
                e.queued.bytes += b.size as u64;
            }
            e.arrived += 1;
        }
        while e.arrived > 0 {
            let b = e.book[0];
            if !b.refused {
                if b.start > t {
                    break;
                }
                st.dequeued += 1;
                st.ecn_dequeued[b.ecn as usize] += 1;
                st.bytes_dequeued += b.size as u64;
                e.queued.packets -= 1;
                e.queued.bytes -= b.size as u64;
                self.tx_end = b.end;
                self.tx_last_size = b.size;
                self.busy_ns += (b.end - b.start).as_nanos();
                self.tx_bytes += b.size as u64;
                self.tx_packets += 1;
            }
            e.book.pop_front();
            e.arrived -= 1;
            e.started = e.started.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Link, LinkConfig};
    use crate::packet::Packet;
    use aqm::{AqmSpec, Backlog, Duration, Limit, Rate, Time};

    fn link(limit: Limit) -> Link<Packet> {
        Link::new(LinkConfig { name: "x", rate: Rate::from_mbps(10), delay: Duration::ZERO, limit, aqm: &AqmSpec::default(), schedule: Vec::new(), trace: None, rng: crate::rng::stream(1, "x") })
    }

    #[test]
    fn an_eager_link_books_droptail_passages_and_settles_them_in_time() {
        // 10 Mbps: 1500 B take 1.2 ms. Buffer of 2 packets (the one being sent is
        // not in the buffer). Four packets at t = 0: the first is sent at once, two
        // wait (starts 1.2 and 2.4 ms), the fourth finds 2 waiting and is refused.
        let ms = |x: f64| Time::from_nanos((x * 1e6) as u64);
        let mut l = link(Limit::packets(2));
        l.set_sampled(true);
        l.make_eager(Time::MAX);
        assert_eq!(l.book(ms(0.0), 1500, aqm::Ecn::NotEct), Ok((ms(0.0), ms(1.2))));
        assert_eq!(l.book(ms(0.0), 1500, aqm::Ecn::NotEct), Ok((ms(1.2), ms(2.4))));
        assert_eq!(l.book(ms(0.0), 1500, aqm::Ecn::NotEct), Ok((ms(2.4), ms(3.6))));
        assert_eq!(l.book(ms(0.0), 1500, aqm::Ecn::NotEct), Err(3000));
        // at 1.2 ms the second packet starts (a start precedes an arrival at the
        // same time): one waits, so this one is admitted, to start at 3.6 ms
        assert_eq!(l.book(ms(1.2), 1500, aqm::Ecn::NotEct), Ok((ms(3.6), ms(4.8))));
        // at 10 ms the link is idle: sent at once
        assert_eq!(l.book(ms(10.0), 500, aqm::Ecn::NotEct), Ok((ms(10.0), ms(10.4))));
        // just before 1.2 ms: 4 arrivals, 1 refused, 1 sent (busy until 1.2 ms), 2 waiting
        l.settle(Time::from_nanos(ms(1.2).as_nanos() - 1));
        let st = l.stats();
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.drops[0]), (4, 3, 1, 1));
        assert_eq!(l.backlog(), Backlog { packets: 2, bytes: 3000 });
        assert_eq!(l.sent_until(ms(1.0)), (1_000_000, 0, 0), "the first transmission is under way");
        // at 1.2 ms: the fifth arrived, the second started; the first has been sent
        l.settle(ms(1.2));
        let st = l.stats();
        assert_eq!((st.arrivals, st.enqueued, st.dequeued), (5, 4, 2));
        assert_eq!(l.backlog(), Backlog { packets: 2, bytes: 3000 });
        assert_eq!(l.sent_until(ms(1.2)), (1_200_000, 1500, 1));
        assert!(l.conserved());
        // at the end everything has left
        l.settle(ms(20.0));
        let st = l.stats();
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.bytes_dequeued), (6, 5, 5, 6500));
        assert_eq!(l.backlog(), Backlog::default());
        assert_eq!(l.sent_until(ms(20.0)), (5_200_000, 6500, 5));
        assert!(l.conserved());
    }

    #[test]
    fn an_unsampled_eager_link_decides_alike_and_counts_up_to_the_end_of_the_run() {
        // the bookings of the test above, on a link read only at the end of a run
        // that ends at 3.6 ms: the same decisions; the packet starting at 10 ms is
        // still queued at the end
        let ms = |x: f64| Time::from_nanos((x * 1e6) as u64);
        let mut l = link(Limit::packets(2));
        l.make_eager(ms(3.6));
        let got: Vec<_> = [(0.0, 1500), (0.0, 1500), (0.0, 1500), (0.0, 1500), (1.2, 1500), (10.0, 500)].iter().map(|&(t, b)| l.book(ms(t), b, aqm::Ecn::NotEct)).collect();
        assert_eq!(got, vec![Ok((ms(0.0), ms(1.2))), Ok((ms(1.2), ms(2.4))), Ok((ms(2.4), ms(3.6))), Err(3000), Ok((ms(3.6), ms(4.8))), Ok((ms(10.0), ms(10.4)))]);
        l.settle(ms(3.6));
        let st = l.stats();
        assert_eq!((st.arrivals, st.enqueued, st.dequeued, st.drops[0], st.bytes_dequeued), (6, 5, 4, 1, 6000));
        assert_eq!(l.backlog(), Backlog { packets: 1, bytes: 500 });
        assert!(l.conserved());
    }
}
