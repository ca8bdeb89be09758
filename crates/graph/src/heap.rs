//! Giving freed memory back to the system between the phases of a
//! command.

/// Gives the pages the allocator holds free back to the system, in every
/// arena: glibc's `malloc_trim(0)` (which also `madvise`s free pages in the
/// middle of the heap, not only its top). Glibc keeps what a phase freed
/// among the blocks that outlive it, and a later phase, on another thread
/// and so another arena, takes fresh pages beside them, so the resident
/// size adds the phases up. Callers call it where a large, short-lived
/// working set has just been freed; it costs tens of milliseconds on a
/// 1 GB trace's graph, and a later allocation faults the pages back in.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim_heap() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` takes no pointer and only returns free pages
    // to the kernel (madvise); glibc serializes it with other allocations.
    unsafe {
        malloc_trim(0);
    }
}

/// Other allocators return freed memory on their own terms.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_heap() {}
