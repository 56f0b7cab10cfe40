//! The byte copy used for every large move in the shm backend.
//!
//! Why not `memcpy`: on this project's machines (AMD EPYC under a VM) glibc's memcpy
//! uses `rep movsb` for mid-sized copies, which runs several times slower when the source
//! is page-aligned and the destination is not — exactly our case, since slots and rings
//! are page-aligned and user buffers come from malloc (address ≡ 16 mod 4096; measured:
//! docs/performance.md, "Figures behind code choices"). A plain 64-byte SSE2 loop runs at
//! memory speed for every alignment; SSE2 is part of the x86-64 baseline, so no feature
//! detection is needed.
//! On Intel glibc's `memcpy` is the faster one from a few KiB (`INTEL_MEMCPY_FROM`), and
//! is used there. From 16 MiB, on any x86-64 CPU with AVX, copies stream past the caches
//! (`STREAM_FROM`).

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// `src` is valid for `n` bytes of reads, `dst` for `n` bytes of writes, and the two
/// ranges don't overlap (as `ptr::copy_nonoverlapping`).
#[inline]
pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if n >= STREAM_FROM && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: forwarded contract; AVX was detected just above.
        unsafe { copy_stream(dst, src, n) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if n >= 512 && (n < INTEL_MEMCPY_FROM || !memcpy_is_fast()) {
        // SAFETY: forwarded contract; SSE2 is always present on x86_64.
        unsafe { copy_sse2(dst, src, n) };
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

/// From this size on, where glibc's `memcpy` is not the slow case above (Intel), it is
/// used. Out of cache it copies about twice as fast as the SSE2 loop (one thread, source
/// page-aligned, destination 16 bytes off). In cache, in a loop of one process, the two
/// are even from 64 KiB (in L2) and `memcpy` is ahead below; inside the collectives, where
/// a copy reads lines another core has just written (a slot's chunk, a peer's ring),
/// `memcpy` (AVX-512 and `rep movsb` on this Sapphire Rapids) is far ahead from 4 KiB: the
/// limit was 1 MiB, so every slot chunk (at most 256 KiB) took the loop. Moving the limit
/// to 4 KiB raised the collectives' busbw at 64 KiB (2, 4 and 8 ranks) and at 16 MiB (8
/// ranks), and lost nothing past the spread. Below 4 KiB the loop stays: `memcpy`
/// everywhere slowed a 1 KiB ping-pong (measured: docs/performance.md, "Zero-copy
/// buffers: `Comm::alloc`" and "glibc's memcpy through the slots; checks on MPI at 64
/// KiB; NCCL non-blocking").
const INTEL_MEMCPY_FROM: usize = 4 << 10;

/// Whether glibc's `memcpy` is trusted for large copies: on Intel CPUs. AMD's `rep movsb`
/// is the slow case in the module docs, and other vendors are unmeasured.
#[cfg(target_arch = "x86_64")]
fn memcpy_is_fast() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| {
        // CPUID leaf 0 (the vendor string) exists on every x86-64 CPU.
        let id = std::arch::x86_64::__cpuid(0);
        let vendor: Vec<u8> = [id.ebx, id.edx, id.ecx].iter().flat_map(|r| r.to_le_bytes()).collect();
        vendor == b"GenuineIntel"
    })
}

/// From this size on a copy writes around the caches (non-temporal stores): its
/// destination cannot stay in cache anyway, and ordinary stores first read every line they
/// write (three line transfers per line copied instead of two). Out of cache that is the
/// difference: in a C loop of two processes, each copying its own block and reading its
/// peer's with `process_vm_readv` (all_gather at 2 ranks), streaming stores made the own
/// copy faster from 24 MiB blocks, were even at 16 MiB and slightly slower at 8 MiB. In
/// dist, at 2 ranks, they raised all_gather and all_to_all at 64 MiB, and with `--shared`
/// buffers, whose blocks are copied out of the peers' mappings, all_reduce too. From 4
/// MiB instead, all_reduce 16 MiB on `--shared` buffers lost, so the limit stays at 16 MiB
/// (measured: docs/performance.md, "Figures behind code choices" and "Copies past the
/// caches from 16 MiB; what is left at parity").
#[cfg(target_arch = "x86_64")]
const STREAM_FROM: usize = 16 << 20;

/// Copies with non-temporal stores (AVX, 32 bytes each, whole 64-byte lines), then a
/// store fence.
///
/// # Safety
/// As [`copy`]; the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
unsafe fn copy_stream(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_sfence};
    // Ordinary stores up to the first 64-byte line of `dst`; then whole lines.
    let head = dst.align_offset(64).min(n);
    // SAFETY: [0, head) is in bounds of both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
    let mut i = head;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n, so both 32-byte halves are in bounds of both ranges, and
        // `dst + i` is 64-byte aligned (the streaming store needs 32).
        unsafe {
            let s = src.add(i) as *const __m256i;
            let d = dst.add(i) as *mut __m256i;
            let a = _mm256_loadu_si256(s);
            let b = _mm256_loadu_si256(s.add(1));
            _mm256_stream_si256(d, a);
            _mm256_stream_si256(d.add(1), b);
        }
        i += 64;
    }
    // Non-temporal stores are weakly ordered: fence them before whatever store tells a
    // peer the data is there (a barrier's release).
    _mm_sfence();
    // SAFETY: the tail [i, n) is in bounds.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i) }
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe fn copy_sse2(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n, so every 16-byte access is in bounds of both ranges.
        unsafe {
            let s = src.add(i) as *const __m128i;
            let d = dst.add(i) as *mut __m128i;
            let a = _mm_loadu_si128(s);
            let b = _mm_loadu_si128(s.add(1));
            let c = _mm_loadu_si128(s.add(2));
            let e = _mm_loadu_si128(s.add(3));
            _mm_storeu_si128(d, a);
            _mm_storeu_si128(d.add(1), b);
            _mm_storeu_si128(d.add(2), c);
            _mm_storeu_si128(d.add(3), e);
        }
        i += 64;
    }
    // SAFETY: the tail [i, n) is in bounds.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i) }
}

/// `dst.copy_from_slice(src)` through [`copy`].
#[inline]
pub(crate) fn copy_slice(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_slice lengths");
    // SAFETY: two distinct slices of equal length (a &mut and a & can't overlap).
    unsafe { copy(dst.as_mut_ptr(), src.as_ptr(), src.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_and_alignment() {
        const M: usize = INTEL_MEMCPY_FROM;
        let src: Vec<u8> = (0..((1u32 << 20) + 5000)).map(|i| (i * 31 % 251) as u8).collect();
        for len in [0usize, 1, 63, 64, 65, 511, 512, 513, 1000, M - 1, M, M + 1, 65537, 1 << 20, (1 << 20) + 4097] {
            for so in 0..3 {
                for d_off in 0..3 {
                    let mut dst = vec![0xAAu8; len + 8];
                    copy_slice(&mut dst[d_off..d_off + len], &src[so..so + len]);
                    assert_eq!(&dst[d_off..d_off + len], &src[so..so + len], "len {len} so {so} do {d_off}");
                    assert!(dst[..d_off].iter().all(|&b| b == 0xAA) && dst[d_off + len..].iter().all(|&b| b == 0xAA));
                }
            }
        }
    }

    #[test]
    fn streams_large_copies_at_every_alignment() {
        let len = STREAM_FROM + 4097;
        let src: Vec<u8> = (0..len + 64).map(|i| (i * 31 % 251) as u8).collect();
        let mut dst = vec![0xAAu8; len + 128];
        for (so, d_off) in [(0, 0), (1, 3), (17, 64), (32, 33)] {
            for n in [STREAM_FROM, len] {
                dst.fill(0xAA);
                copy_slice(&mut dst[d_off..d_off + n], &src[so..so + n]);
                assert!(dst[d_off..d_off + n] == src[so..so + n], "len {n} so {so} do {d_off}");
                assert!(dst[..d_off].iter().all(|&b| b == 0xAA) && dst[d_off + n..].iter().all(|&b| b == 0xAA));
            }
        }
    }
}
