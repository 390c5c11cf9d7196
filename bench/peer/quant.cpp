// quant IN OUT FTYPE (bench/peer-kquants.sh): llama_model_quantize of the prebuilt llama.cpp, for test files.
#include "llama.h"
#include <cstdio>
#include <cstdlib>
int main(int argc, char ** argv) {
    if (argc < 4) { fprintf(stderr, "usage: quant IN OUT FTYPE\n"); return 1; }
    llama_backend_init();
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = (enum llama_ftype) atoi(argv[3]);
    qp.allow_requantize = true;
    qp.nthread = 2;
    uint32_t rc = llama_model_quantize(argv[1], argv[2], &qp);
    printf("quantize rc %u\n", rc);
    return rc != 0;
}
