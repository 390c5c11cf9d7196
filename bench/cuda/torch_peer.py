"""PyTorch peer for `rigscope cuda-bench`: the same Llama shapes in plain
PyTorch (bf16 weights, static bf16 KV cache, fused QKV and gate/up as
gpt-fast does), the whole decode step (embedding to argmax) captured in one
CUDA graph and replayed. Prints decode tokens/s at a context of 512."""
import sys, time, torch
import torch.nn.functional as F

SHAPES = {
    "llama-8b": dict(dim=4096, layers=32, heads=32, kv=8, ffn=14336, vocab=128256),
    "llama-1b": dict(dim=2048, layers=16, heads=32, kv=8, ffn=8192, vocab=128256),
}
dev, dt = "cuda", torch.bfloat16


class Model:
    def __init__(s, dim, layers, heads, kv, ffn, vocab, slots):
        s.hd, s.h, s.kv, s.dim = dim // heads, heads, kv, dim
        r = lambda *sh: (torch.rand(*sh, device=dev, dtype=dt) * 2 - 1) * (1.7 / sh[-1] ** 0.5)
        s.emb, s.out = r(vocab, dim), r(vocab, dim)
        s.L = [dict(wqkv=r((heads + 2 * kv) * s.hd, dim), wo=r(dim, heads * s.hd),
                    w13=r(2 * ffn, dim), w2=r(dim, ffn),
                    n1=torch.ones(dim, device=dev, dtype=dt), n2=torch.ones(dim, device=dev, dtype=dt))
               for _ in range(layers)]
        s.norm = torch.ones(dim, device=dev, dtype=dt)
        s.kc = [torch.zeros(1, kv, slots, s.hd, device=dev, dtype=dt) for _ in range(layers)]
        s.vc = [torch.zeros(1, kv, slots, s.hd, device=dev, dtype=dt) for _ in range(layers)]
        inv = 1.0 / (500000 ** (torch.arange(0, s.hd, 2, device=dev).float() / s.hd))
        ang = torch.outer(torch.arange(slots, device=dev).float(), inv)
        s.cos, s.sin = ang.cos(), ang.sin()
        s.slots = slots

    def rope(s, x, pos):  # x (1, h, 1, hd), rotate-half
        c, sn = s.cos[pos].view(1, 1, 1, -1), s.sin[pos].view(1, 1, 1, -1)
        x1, x2 = x.float().chunk(2, -1)
        return torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], -1).to(dt)

    def step(s, tok, pos):  # tok (1,) int64, pos (1,) int64 on device
        x = s.emb[tok].view(1, 1, s.dim)
        mask = (torch.arange(s.slots, device=dev) <= pos).view(1, 1, 1, -1)
        for l, L in enumerate(s.L):
            h = F.rms_norm(x, (s.dim,), L["n1"], 1e-5)
            qkv = F.linear(h, L["wqkv"])
            q, k, v = qkv.split([s.h * s.hd, s.kv * s.hd, s.kv * s.hd], -1)
            q = s.rope(q.view(1, 1, s.h, s.hd).transpose(1, 2), pos)
            k = s.rope(k.view(1, 1, s.kv, s.hd).transpose(1, 2), pos)
            s.kc[l].index_copy_(2, pos, k)
            s.vc[l].index_copy_(2, pos, v.view(1, 1, s.kv, s.hd).transpose(1, 2))
            a = F.scaled_dot_product_attention(q, s.kc[l], s.vc[l], attn_mask=mask, enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(1, 1, -1), L["wo"])
            h = F.rms_norm(x, (s.dim,), L["n2"], 1e-5)
            g, u = F.linear(h, L["w13"]).chunk(2, -1)
            x = x + F.linear(F.silu(g) * u, L["w2"])
        logits = F.linear(F.rms_norm(x, (s.dim,), s.norm, 1e-5), s.out)
        return logits.view(-1).argmax()


def bench(name, ctx=512, steps=100):
    m = Model(**SHAPES[name], slots=ctx + 16)
    tok = torch.tensor([1], device=dev)
    pos = torch.tensor([ctx - 1], device=dev)
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            m.step(tok, pos)
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = m.step(tok, pos)
    reps = []
    for r in range(6):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(steps):
            g.replay()
            tok.copy_(out.view(1))  # next token from the device argmax
        e1.record()
        torch.cuda.synchronize()
        if r:
            reps.append(e0.elapsed_time(e1) / steps)
    reps.sort()
    ms = reps[len(reps) // 2]
    wb = sum(p.numel() * 2 for L in m.L for p in (L["wqkv"], L["wo"], L["w13"], L["w2"])) + m.out.numel() * 2
    print(f"torch-peer {name} torch {torch.__version__}: {1000 / ms:.1f} tok/s ({ms * 1000:.0f} us/step, {wb / 1e9:.2f} GB weights, {wb / ms / 1e6:.0f} GB/s)", flush=True)
    del m, g
    torch.cuda.empty_cache()


if __name__ == "__main__":
    for n in sys.argv[1:] or ["llama-8b", "llama-1b"]:
        bench(n)
