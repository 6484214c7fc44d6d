//! `AqmSpec::built_bytes` (what the memory estimate of a run counts for each queue's
//! AQM) is the heap that `AqmSpec::build` allocates, measured with a counting
//! allocator, for every kind of the registry at its defaults and at the sizes that
//! matter (flow-queue counts). An AQM added with a large table and no `built_bytes`
//! fails here.

mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use aqm::{AqmSpec, Limit};
use harness::P;

/// Counts the heap held by allocations of this thread only (the test harness's own
/// threads allocate meanwhile).
struct Counting;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    let _ = CURRENT.try_with(|c| c.set(c.get() + n));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            add(l.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        add(-(l.size() as isize));
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            add(new as isize - l.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap held by a freshly built AQM of `spec`.
fn measured(spec: &AqmSpec) -> usize {
    let before = CURRENT.with(Cell::get);
    let q = spec.build::<P>(Limit::packets(1000));
    let after = CURRENT.with(Cell::get);
    drop(q);
    (after - before) as usize
}

fn with(kind: &str, flows: u32) -> AqmSpec {
    AqmSpec::from_kind(kind, serde_json::json!({ "flows": flows })).unwrap()
}

#[test]
fn built_bytes_is_what_build_allocates_for_every_kind() {
    let mut specs: Vec<AqmSpec> = AqmSpec::KINDS.iter().map(|k| AqmSpec::default_for(k.kind).unwrap()).collect();
    for kind in ["fq_codel", "fq_pie"] {
        for flows in [1, 64, 65536] {
            specs.push(with(kind, flows));
        }
    }
    for spec in &specs {
        let got = measured(spec);
        assert_eq!(spec.built_bytes::<P>(), got, "{}: built_bytes against the heap build allocates", spec.kind());
    }
    // by hand, the sizes that dominate: FQ-CoDel's 1024 queues at their defaults,
    // CAKE's 1024 (sch_cake CAKE_QUEUES) whatever its parameters
    let fq = AqmSpec::default_for("fq_codel").unwrap();
    assert!(fq.built_bytes::<P>() > 1024 * 64, "{}", fq.built_bytes::<P>());
    let cake = AqmSpec::default_for("cake").unwrap();
    assert!(cake.built_bytes::<P>() > 1024 * 64, "{}", cake.built_bytes::<P>());
}
