// quantref: ggml's own quantizer as a reference for rigscope's encoders.
// Reads float32 rows (little-endian) from stdin and writes them quantized by
// ggml_quantize_chunk (no importance matrix) to stdout.
//   quantref TYPE N_PER_ROW < rows.f32 > rows.q      (TYPE: ggml type id, e.g. 12 = Q4_K, 14 = Q6_K)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "ggml.h"

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: quantref TYPE N_PER_ROW < f32 > blocks\n"); return 2; }
    auto type = (ggml_type)atoi(argv[1]);
    int64_t n = atoll(argv[2]);
    std::vector<float> x;
    float buf[4096];
    size_t got;
    while ((got = fread(buf, sizeof(float), 4096, stdin)) > 0) x.insert(x.end(), buf, buf + got);
    if (n <= 0 || x.size() % n) { fprintf(stderr, "quantref: %zu values is not a whole number of %lld-value rows\n", x.size(), (long long)n); return 1; }
    int64_t rows = x.size() / n;
    std::vector<char> out(ggml_row_size(type, n) * rows);
    size_t bytes = ggml_quantize_chunk(type, x.data(), out.data(), 0, rows, n, nullptr);
    fwrite(out.data(), 1, bytes, stdout);
    return 0;
}
