//! The two sorts Redis's geo replies come out of, ported so that elements
//! comparing equal (points at the same distance) end up in Redis's order:
//!
//! - `c_qsort`: glibc 2.36's qsort, a top-down merge sort (msort.c), which
//!   is what Debian's Redis 7.0 calls for a full sort;
//! - `pqsort`: Redis's own partial quicksort (pqsort.c, from NetBSD's
//!   Bentley & McIlroy qsort), which sorts only what lands in a range of
//!   positions (GEO* ... COUNT n picks the n nearest this way).
//!
//! Both take a C-style comparator (negative, zero, positive), which need
//! not be a total order: Redis's distance comparator calls NaN smaller.

use std::cmp::Ordering;

/// C's `int (*cmp)(a, b)` reduced to an Ordering.
pub type Cmp<T> = fn(&T, &T) -> Ordering;

/// glibc's msort_with_tmp: split in halves, sort each, merge taking from
/// the left while left <= right (stable).
pub fn c_qsort<T: Copy>(v: &mut [T], cmp: Cmp<T>) {
    let mut tmp = Vec::with_capacity(v.len());
    msort(v, &mut tmp, cmp);
}

fn msort<T: Copy>(b: &mut [T], tmp: &mut Vec<T>, cmp: Cmp<T>) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    msort(&mut b[..n1], tmp, cmp);
    msort(&mut b[n1..], tmp, cmp);
    tmp.clear();
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&b[i], &b[j]) != Ordering::Greater {
            tmp.push(b[i]);
            i += 1;
        } else {
            tmp.push(b[j]);
            j += 1;
        }
    }
    // What is left of the right half is already in place.
    tmp.extend_from_slice(&b[i..n1]);
    let len = tmp.len();
    b[..len].copy_from_slice(tmp);
}

/// Redis's pqsort(a, n, es, cmp, lrange, rrange): afterwards the elements
/// at positions `lrange..=rrange` are those a full sort would put there,
/// in order; the rest are partitioned around them.
pub fn pqsort<T>(v: &mut [T], cmp: Cmp<T>, lrange: usize, rrange: usize) {
    pqsort_part(v, 0, v.len(), cmp, lrange, rrange);
}

/// Bentley & McIlroy's median of three.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: Cmp<T>) -> usize {
    use Ordering::{Greater, Less};
    if cmp(&v[a], &v[b]) == Less {
        if cmp(&v[b], &v[c]) == Less {
            b
        } else if cmp(&v[a], &v[c]) == Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Greater {
        b
    } else if cmp(&v[a], &v[c]) == Less {
        a
    } else {
        c
    }
}

/// Swaps the `n` elements from `a` with the `n` from `b` (vecswap).
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

/// Whether the part `start..start + len` can hold a position of the
/// wanted range (Redis compares byte addresses; this is the same test in
/// element positions).
fn overlaps(start: usize, len: usize, l: usize, r: usize) -> bool {
    !((l < start && r < start) || (l >= start + len && r >= start + len))
}

fn pqsort_part<T>(v: &mut [T], mut a: usize, mut n: usize, cmp: Cmp<T>, l: usize, r: usize) {
    use Ordering::{Equal, Greater, Less};
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) == Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        // Positions as signed numbers: `pc` may step just below `pb`.
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a as isize + n as isize - 1, a as isize + n as isize - 1);
        loop {
            while pb as isize <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Greater {
                    break;
                }
                if c == Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb as isize <= pc {
                let c = cmp(&v[pc as usize], &v[a]);
                if c == Less {
                    break;
                }
                if c == Equal {
                    v.swap(pc as usize, pd as usize);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb as isize > pc {
                break;
            }
            v.swap(pb, pc as usize);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let (pc, pd) = (pc as usize, pd as usize);
        let s = (pa - a).min(pb - pa);
        vecswap(v, a, pb - s, s);
        let s = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - s, s);
        let left = pb - pa;
        if left > 1 && overlaps(a, left, l, r) {
            pqsort_part(v, a, left, cmp, l, r);
        }
        let right = pd - pc;
        if right > 1 {
            // Iterate rather than recurse, as Redis does.
            a = pn - right;
            n = right;
            if overlaps(a, n, l, r) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_key(a: &(u32, u32), b: &(u32, u32)) -> Ordering {
        a.0.cmp(&b.0)
    }

    #[test]
    fn c_qsort_is_stable() {
        let mut v: Vec<(u32, u32)> = (0..100).map(|i| ((i * 7919) % 13, i)).collect();
        let mut expected = v.clone();
        expected.sort_by_key(|e| e.0);
        c_qsort(&mut v, by_key);
        assert_eq!(v, expected);
    }

    #[test]
    fn pqsort_sorts_the_range() {
        let mut rng = fastrand::Rng::with_seed(7);
        for n in [0usize, 1, 5, 7, 8, 39, 41, 100, 500] {
            for _ in 0..20 {
                let v: Vec<(u32, u32)> = (0..n as u32).map(|i| (rng.u32(0..50), i)).collect();
                let mut sorted: Vec<u32> = v.iter().map(|e| e.0).collect();
                sorted.sort();
                if n == 0 {
                    continue;
                }
                let k = rng.usize(0..n);
                let mut w = v.clone();
                pqsort(&mut w, by_key, 0, k);
                let got: Vec<u32> = w[..=k].iter().map(|e| e.0).collect();
                assert_eq!(got, sorted[..=k]);
                let mut all: Vec<(u32, u32)> = w.clone();
                all.sort();
                let mut orig = v.clone();
                orig.sort();
                assert_eq!(all, orig, "a permutation");
            }
        }
    }
}
