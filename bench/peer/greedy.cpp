// greedy MODEL N [FORCED] < prompts (bench/peer-kquants.sh): for each line of prompt token ids, greedy-decode N
// tokens with the prebuilt llama.cpp (CPU, 1 thread) and print them, one line each. With FORCED (a file of
// one line of tokens per prompt) each step is fed the forced token instead of its own, and the line is
// each step's argmax (teacher forcing: compare it with FORCED). GREEDY_NGL=99 runs every layer on the GPU
// (a CUDA build: bench/cuda/peer-greedy.sh).
#include "llama.h"
#include "ggml-backend.h"
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
static void quiet(enum ggml_log_level lvl, const char * txt, void *) { if (lvl >= GGML_LOG_LEVEL_ERROR) fputs(txt, stderr); }
int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: greedy MODEL N [FORCED] < prompts\n"); return 1; }
    std::vector<std::vector<llama_token>> forced;
    if (argc > 3) {
        std::ifstream f(argv[3]);
        if (!f) { fprintf(stderr, "cannot read %s\n", argv[3]); return 1; }
        for (std::string l; std::getline(f, l);) {
            std::istringstream is(l);
            forced.emplace_back();
            for (llama_token t; is >> t;) forced.back().push_back(t);
        }
    }
    llama_log_set(quiet, nullptr);
    const char * bins = getenv("LLAMA_BINS");
    if (bins) ggml_backend_load_all_from_path(bins); else ggml_backend_load_all();
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    const char * ngl = getenv("GREEDY_NGL");
    mp.n_gpu_layers = ngl ? atoi(ngl) : 0;
    mp.progress_callback = [](float, void *) { return true; };  // no progress dots
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048; cp.n_batch = 2048; cp.n_ubatch = 2048; cp.n_threads = 1; cp.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "ctx failed\n"); return 1; }
    int n = atoi(argv[2]);
    auto argmax = [&](const float * l) { int b = 0; for (int i = 1; i < n_vocab; i++) if (l[i] > l[b]) b = i; return b; };
    std::string line;
    for (size_t pi = 0; std::getline(std::cin, line);) {
        std::istringstream is(line);
        std::vector<llama_token> p; llama_token t;
        while (is >> t) p.push_back(t);
        if (p.empty()) continue;
        const std::vector<llama_token> * fp = nullptr;
        if (!forced.empty()) {
            if (pi >= forced.size() || (int) forced[pi].size() < n) { fprintf(stderr, "%s: no %d forced tokens for prompt %zu\n", argv[3], n, pi); return 1; }
            fp = &forced[pi];
        }
        pi++;
        llama_memory_clear(llama_get_memory(ctx), true);
        if (llama_decode(ctx, llama_batch_get_one(p.data(), (int) p.size()))) { fprintf(stderr, "decode failed\n"); return 1; }
        t = argmax(llama_get_logits_ith(ctx, -1));
        for (int i = 0; i < n; i++) {
            printf(i ? " %d" : "%d", t);
            if (fp) t = (*fp)[i];
            if (i + 1 < n && llama_decode(ctx, llama_batch_get_one(&t, 1))) { fprintf(stderr, "decode failed\n"); return 1; }
            if (i + 1 < n) t = argmax(llama_get_logits_ith(ctx, -1));
        }
        printf("\n");
    }
    return 0;
}
