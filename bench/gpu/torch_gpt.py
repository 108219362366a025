"""The ~1B GPT of examples/configs/gpt-1b.json in PyTorch, trained the way
Weft trains it (bf16 compute with f32 master weights, AdamW betas 0.9/0.95,
weight decay 0.1, gradient clipping at 1.0, tied embeddings, GELU tanh,
pre-LN blocks, causal attention through scaled_dot_product_attention), to
time a training step beside Weft's on the same GPU, batch and sequence.
Prints one JSON line per mode: median step seconds and tokens/s over the
timed steps (after warm-up steps; torch.compile compiles during warm-up).

usage: torch_gpt.py CONFIG BATCH SEQ [eager|compile ...]   (needs torch, a GPU)
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.c_attn, self.attn_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], d)
        self.wpe = nn.Embedding(c["n_positions"], d)
        self.blocks = nn.ModuleList(Block(d, c["n_head"]) for _ in range(c["n_layer"]))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens, labels):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # Tied, as Weft's GPT-2.
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


def time_mode(config, batch, seq, mode, warmup=3, timed=5):
    torch.manual_seed(0)
    model = GPT(config).cuda()
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_fn = torch.compile(model) if mode == "compile" else model
    tokens = torch.randint(0, 256, (batch, seq), device="cuda")
    labels = torch.randint(0, 256, (batch, seq), device="cuda")
    times = []
    for i in range(warmup + timed):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_fn(tokens, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    peak = torch.cuda.max_memory_allocated()
    del model, opt, step_fn
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return {"system": "PyTorch %s (%s)" % (torch.__version__, mode), "params": params,
            "median_step_s": median, "tokens_per_s": batch * seq / median,
            "peak_memory_bytes": peak, "loss": float(loss)}


def main():
    config = json.load(open(sys.argv[1]))
    batch, seq = int(sys.argv[2]), int(sys.argv[3])
    for mode in sys.argv[4:] or ["eager", "compile"]:
        print(json.dumps(time_mode(config, batch, seq, mode)), flush=True)


if __name__ == "__main__":
    main()
