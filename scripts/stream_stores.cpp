// Plain stores against non-temporal (streaming) stores for out = a + b,
// float32, on the CPU: what a streaming store would gain or cost the CPU
// run loop at each size.
//
//   g++ -O3 -fopenmp scripts/stream_stores.cpp -o /tmp/stream_stores
//   /tmp/stream_stores 1 && /tmp/stream_stores 2      # thread counts
//
// A plain store first reads the output's cache line (a read for ownership),
// so an op that streams from DRAM moves four bytes for every three it needs;
// a streaming store writes the line without reading it and without keeping
// it in the cache. Both loops load two vectors before storing either, as the
// extension's run loop does; the streaming one first writes single elements
// until the output is 32-byte aligned and ends with a store fence. Each size
// is timed in batches, the two loops taking turns for 20 rounds, fastest
// batch of each. The report gives the footprint (a, b and out) beside the
// last-level cache size that sysconf and sysfs report, which need not agree
// in a virtual machine.

#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>

// out[0, n) = a + b, two vectors a step; kStreaming stores them past the
// cache, which needs the output 32-byte aligned (single elements until it is)
// and a fence at the end.
template <bool kStreaming>
__attribute__((target("avx2"))) void add(float* o, const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; kStreaming && i < n && reinterpret_cast<uintptr_t>(o + i) % 32 != 0; ++i) {
    o[i] = a[i] + b[i];
  }
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(a + i + 8);
    const __m256 y0 = _mm256_loadu_ps(b + i), y1 = _mm256_loadu_ps(b + i + 8);
    const __m256 r0 = _mm256_add_ps(x0, y0), r1 = _mm256_add_ps(x1, y1);
    if constexpr (kStreaming) {
      _mm256_stream_ps(o + i, r0);
      _mm256_stream_ps(o + i + 8, r1);
    } else {
      _mm256_storeu_ps(o + i, r0);
      _mm256_storeu_ps(o + i + 8, r1);
    }
  }
  for (; i < n; ++i) {
    o[i] = a[i] + b[i];
  }
  if constexpr (kStreaming) {
    _mm_sfence();  // the streamed lines reach memory before another thread reads them
  }
}

// Best microseconds per call of each loop over n elements on `threads` threads.
void time_both(int64_t n, int threads, double best[2]) {
  float* a = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* b = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* o = static_cast<float*>(std::aligned_alloc(64, n * 4));
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1.0f;
    o[i] = 0.0f;
  }
  const int calls = n >= (int64_t{1} << 21) ? 10 : 50;
  best[0] = best[1] = 1e30;
  for (int round = 0; round < 20; ++round) {
    for (int streaming = 0; streaming < 2; ++streaming) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) {
#pragma omp parallel num_threads(threads)
        {
          const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
          const int64_t chunk = (n + nt - 1) / nt, s = t * chunk;
          const int64_t e = s + chunk < n ? s + chunk : n;
          (streaming ? add<true> : add<false>)(o + s, a + s, b + s, e - s);
        }
      }
      const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - t0;
      if (us.count() / calls < best[streaming]) {
        best[streaming] = us.count() / calls;
      }
    }
  }
  std::free(a);
  std::free(b);
  std::free(o);
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  std::string sysfs = "?";
  std::ifstream("/sys/devices/system/cpu/cpu0/cache/index3/size") >> sysfs;
  std::printf("%d thread(s); last-level cache: sysconf %ld KiB, sysfs %s\n", threads,
              sysconf(_SC_LEVEL3_CACHE_SIZE) / 1024, sysfs.c_str());
  std::printf("| elements | footprint MiB | plain us | streaming us | plain / streaming |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int64_t n : {int64_t{1} << 16, int64_t{1} << 18, int64_t{1} << 20, int64_t{3} << 19,
                    int64_t{1} << 21, int64_t{3} << 20, int64_t{1} << 22, int64_t{1} << 24}) {
    double best[2];
    time_both(n, threads, best);
    std::printf("| %ld | %.1f | %.1f | %.1f | %.2f |\n", static_cast<long>(n),
                3.0 * n * 4 / (1 << 20), best[0], best[1], best[0] / best[1]);
    std::fflush(stdout);
  }
}
