// Register transposes: one transposed float32 input beside a dense one, on
// CPUs with AVX-512, with no tile buffer.
//
// Sixteen float32 are one 64-byte cache line and one 512-bit register, so a
// 16 x 16 block of the transposed input is sixteen whole lines, transposed in
// registers and combined with sixteen rows of the dense input at once, as
// Inductor's kernel for `a * b` does. The loop walks sixteen output rows along
// their length: out and the dense input are 32 sequential streams, and each
// line of the transposed input is read once, all of it used. Out of cache this
// keeps up with torch.compile where the buffered tiles (tiles.h) fall behind
// (Note [Register transposes]). Other dtypes and CPUs keep the tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../layout.h"
#include "isa.h"
#include "tiles.h"
#include "vector.h"

namespace extension_cpp::fast::cpu {

#if EXTENSION_CPP_AVX512
// Rows of a 16 x 16 float32 block in r[0..15] become its columns: 32-bit,
// then 64-bit interleaves within each 128-bit lane, then two exchanges of
// 128-bit lanes. Shuffles move bits, so values pass through unchanged.
EXTENSION_CPP_TARGET_AVX512 C10_ALWAYS_INLINE void transpose_16x16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // t[2i], t[2i+1]: rows 2i and 2i+1 interleaved
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + c], lane L: column 4L + c of rows 4i..4i+3
    const __m512d lo0 = _mm512_castps_pd(t[4 * i]), hi0 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d lo1 = _mm512_castps_pd(t[4 * i + 2]), hi1 = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // lane L of u[c], u[4 + c], ... -> r[4L + c]
    const __m512 p0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
    const __m512 p1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
    const __m512 p2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    const __m512 p3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(p0, p2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(p0, p2, 0xDD);
    r[8 + c] = _mm512_shuffle_f32x4(p1, p3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(p1, p3, 0xDD);
  }
}

// An empty asm statement that may change p, as far as the compiler knows:
// each row's address is then the previous one plus the stride, where GCC
// would otherwise precompute sixteen row pointers per operand, keep them on
// the stack and reload them every block (Note [Pointer walk]).
template <typename T>
C10_ALWAYS_INLINE void opaque(T*& p) {
  asm("" : "+r"(p));
}

// How far ahead of the block, in floats, transposed_rows_avx512 asks for
// each output row's line: four blocks (Note [Output prefetch]).
constexpr int64_t kOutPrefetch = 64;

// z = op(dense, tr) lane by lane, or op(tr, dense) when the transposed input
// is a (kTransposedA). Vectors pass by reference, as in op_lanes: this
// function has no AVX-512 target of its own.
template <bool kTransposedA, typename V, typename Op>
C10_ALWAYS_INLINE void combine(V& z, const V& dense, const V& tr, Op op) {
  if constexpr (kTransposedA) {
    op_lanes(z, tr, dense, op);
  } else {
    op_lanes(z, dense, tr, op);
  }
}

// 16 rows of out, `cols` (a multiple of 16) long: out[r * so + k] =
// op(dense[r * sd + k], tr[k * st + r]), or op(tr, dense) when the transposed
// input is a (kTransposedA). The 16-lane loop of op compiles to one vector
// instruction per arithmetic operation (fp-contract=off, as in every body:
// a * b + c stays two roundings, as in PyTorch). out may be exactly the dense
// input: each row is read before it is written.
template <bool kTransposedA, typename Op>
EXTENSION_CPP_TARGET_AVX512 void transposed_rows_avx512(float* out, int64_t so, const float* dense,
                                                        int64_t sd, const float* tr, int64_t st,
                                                        int64_t cols, Op op) {
  typedef float V __attribute__((vector_size(64)));
  for (int64_t k = 0; k < cols; k += 16) {
    __m512 r[16];
    const float* t = tr + k * st;
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) {  // rows k..k+15 of the transposed input's storage
      r[q] = _mm512_loadu_ps(t);
      t += st;
      opaque(t);
    }
    transpose_16x16(r);  // r[q]: tr[k * st + q] ... tr[(k + 15) * st + q], output row q
    const float* x = dense + k;
    float* o = out + k;
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) {
      _mm_prefetch(reinterpret_cast<const char*>(o + kOutPrefetch), _MM_HINT_T0);
      const V xq = (V)_mm512_loadu_ps(x), yq = (V)r[q];
      V z;
      combine<kTransposedA>(z, xq, yq, op);
      _mm512_storeu_ps(o, (__m512)z);
      x += sd;
      o += so;
      opaque(x);
      opaque(o);
    }
  }
}

// The part of one block at a tile's edge: `rows` rows of out (at most 16)
// and `cols` columns (at most 16), through masked loads and stores, which
// touch no memory in the lanes they leave out.
template <bool kTransposedA, typename Op>
EXTENSION_CPP_TARGET_AVX512 void transposed_edge_avx512(float* out, int64_t so, const float* dense,
                                                        int64_t sd, const float* tr, int64_t st,
                                                        int rows, int cols, Op op) {
  typedef float V __attribute__((vector_size(64)));
  const __mmask16 row_lanes = static_cast<__mmask16>((1u << rows) - 1);
  const __mmask16 col_lanes = static_cast<__mmask16>((1u << cols) - 1);
  __m512 r[16];
  for (int q = 0; q < 16; ++q) {  // storage row q of the block is column q of out
    r[q] = q < cols ? _mm512_maskz_loadu_ps(row_lanes, tr + q * st) : _mm512_setzero_ps();
  }
  transpose_16x16(r);
  for (int q = 0; q < rows; ++q) {
    const V xq = (V)_mm512_maskz_loadu_ps(col_lanes, dense + q * sd), yq = (V)r[q];
    V z;
    combine<kTransposedA>(z, xq, yq, op);
    _mm512_mask_storeu_ps(out + q * so, col_lanes, (__m512)z);
  }
}

// One tile of `rows` (at most 16) rows of out, `cols` long: whole 16 x 16
// blocks in one call of transposed_rows_avx512, the columns past the last
// multiple of 16, and every block of a tile short of 16 rows, a masked block
// at a time.
template <bool kTransposedA, typename Op>
void transposed_tile_avx512(float* out, int64_t so, const float* dense, int64_t sd, const float* tr,
                            int64_t st, int64_t cols, int64_t rows, Op op) {
  const int64_t whole = rows == 16 ? cols / 16 * 16 : 0;
  if (whole > 0) {
    transposed_rows_avx512<kTransposedA>(out, so, dense, sd, tr, st, whole, op);
  }
  for (int64_t k = whole; k < cols; k += 16) {
    transposed_edge_avx512<kTransposedA>(out + k, so, dense + k, sd, tr + k * st, st,
                                         static_cast<int>(rows),
                                         static_cast<int>(std::min<int64_t>(16, cols - k)), op);
  }
}
#endif

// Whether the register transposes take this layout: float32 on an AVX-512 CPU
// (and ATen allowing it), exactly one transposed input, the other dense along
// dimension 0, and at least a 16 x 16 block.
template <typename scalar_t>
bool use_register_transposes(const BinaryLayout& l) {
#if EXTENSION_CPP_AVX512
  if constexpr (std::is_same_v<scalar_t, float>) {
    const bool t1 = transposed_input(l, 1), t2 = transposed_input(l, 2);
    return t1 != t2 && l.strides[t1 ? 2 : 1][0] == 1 && l.sizes[0] >= 16 && l.sizes[1] >= 16 &&
           use_avx512();
  }
#endif
  (void)l;
  return false;
}

// Columns of out per tile: 16 rows of 2048 float32 are kGrainSize elements,
// one tile per parallel chunk at the least.
constexpr int64_t kRowsTileCols = 2048;

// out = op(a, b) for a layout use_register_transposes takes, 16 output rows
// at a time.
template <typename scalar_t, typename Op>
void register_transposes_loop(scalar_t* out, const scalar_t* a, const scalar_t* b,
                              const BinaryLayout& l, Op op) {
#if EXTENSION_CPP_AVX512
  if constexpr (std::is_same_v<scalar_t, float>) {
    const int tr = transposed_input(l, 1) ? 1 : 2, dn = 3 - tr;
    const float* inputs[3] = {nullptr, a, b};
    const auto tile_fn =
        tr == 1 ? &transposed_tile_avx512<true, Op> : &transposed_tile_avx512<false, Op>;
    for_each_tile(l, std::min(l.sizes[0], kRowsTileCols), 16, [&](const Tile& tile) {
      tile_fn(out + tile.origin(l, 0), l.strides[0][1], inputs[dn] + tile.origin(l, dn),
              l.strides[dn][1], inputs[tr] + tile.origin(l, tr), l.strides[tr][0], tile.m0, tile.m1,
              op);
    });
    return;
  }
#endif
  (void)out, (void)a, (void)b, (void)l, (void)op;
}

}  // namespace extension_cpp::fast::cpu
