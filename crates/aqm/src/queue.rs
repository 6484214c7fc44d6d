//! The packet store under every AQM: a FIFO that remembers each packet's enqueue
//! time and keeps a running byte count, and the buffer limit.

use std::collections::VecDeque;

use crate::packet::QPacket;
use crate::time::{Duration, Time};

/// A buffer limit in packets, in bytes, or both (whichever is hit first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Limit {
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
}

impl Limit {
    pub const UNLIMITED: Limit = Limit { packets: None, bytes: None };

    pub fn packets(n: u64) -> Limit {
        Limit { packets: Some(n), bytes: None }
    }
    #[inline]
    pub fn bytes(n: u64) -> Limit {
        Limit { packets: None, bytes: Some(n) }
    }
    /// Would a packet of `size` bytes overflow a buffer that holds `backlog`?
    #[inline]
    pub fn overflows(&self, backlog: Backlog, size: u32) -> bool {
        self.packets.is_some_and(|p| backlog.packets + 1 > p)
            || self.bytes.is_some_and(|b| backlog.bytes + size as u64 > b)
    }
}

/// How much a queue holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Backlog {
    pub packets: u64,
    pub bytes: u64,
}

impl Backlog {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }
}

/// A packet with the time it entered the queue.
#[derive(Clone, Debug)]
pub struct Queued<P> {
    pub pkt: P,
    pub enqueued_at: Time,
}

/// A FIFO of timestamped packets with its backlog.
#[derive(Clone, Debug)]
pub struct Fifo<P> {
    items: VecDeque<Queued<P>>,
    bytes: u64,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo { items: VecDeque::new(), bytes: 0 }
    }
}

impl<P: QPacket> Fifo<P> {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn push(&mut self, pkt: P, now: Time) {
        self.bytes += pkt.size_bytes() as u64;
        self.items.push_back(Queued { pkt, enqueued_at: now });
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Queued<P>> {
        let q = self.items.pop_front()?;
        self.bytes -= q.pkt.size_bytes() as u64;
        Some(q)
    }
    /// Removes the newest packet (for drop-from-tail policies).
    pub fn pop_back(&mut self) -> Option<Queued<P>> {
        let q = self.items.pop_back()?;
        self.bytes -= q.pkt.size_bytes() as u64;
        Some(q)
    }
    #[inline]
    pub fn front(&self) -> Option<&Queued<P>> {
        self.items.front()
    }
    /// Sojourn time the head packet would have if it left at `now`.
    #[inline]
    pub fn head_sojourn(&self, now: Time) -> Option<Duration> {
        self.items.front().map(|q| now.saturating_since(q.enqueued_at))
    }
    #[inline]
    pub fn backlog(&self) -> Backlog {
        Backlog { packets: self.items.len() as u64, bytes: self.bytes }
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}
