#!/usr/bin/env python3
"""Load cells for `switchyard optimize --once` from a request mix, bucketed as the gateway's
request monitoring buckets them (src/observe/load_shape.h: log2 octaves, four linear sub-buckets,
a bucket's middle as its size), so the solver sees what a gateway would have counted.

  optimizer_load.py --mix chat:0.64:20-300:64-256,code:0.36:2300-2800:32-64 --rate 11 \
      [--long-share 0.5] [--samples 20000] [--seed 7] [--tokens-per-word 1.73]

Prompt lengths in the mix are words (as `switchyard demo --mix`): the emulator counts
ceil(chars / 4) tokens and the load generator's words average 6.94 characters with the space,
1.73 tokens per word. --long-share overrides the weight of the last class (the long prompts)."""
import argparse
import json
import math
import random


def bucket(tokens):
    tokens = max(1, int(tokens))
    if tokens < 4:
        return tokens
    octave = tokens.bit_length() - 1
    return 4 * octave + ((tokens >> (octave - 2)) & 3)


def bucket_tokens(b):
    if b < 4:
        return float(max(1, b))
    octave, sub = divmod(b, 4)
    width = float(1 << (octave - 2))
    return (4 + sub) * width + (width - 1) / 2.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mix", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--long-share", type=float, default=None)
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tokens-per-word", type=float, default=1.73)
    p.add_argument("--model", default="llama2-7b")
    a = p.parse_args()
    classes = []
    for part in a.mix.split(","):
        name, weight, prompt, output = part.split(":")
        pmin, pmax = map(int, prompt.split("-"))
        omin, omax = map(int, output.split("-"))
        classes.append([name, float(weight), pmin, pmax, omin, omax])
    if a.long_share is not None:
        rest = sum(c[1] for c in classes[:-1])
        for c in classes[:-1]:
            c[1] = (1 - a.long_share) * c[1] / rest if rest > 0 else 0
        classes[-1][1] = a.long_share
    total = sum(c[1] for c in classes)
    rng = random.Random(a.seed)
    counts = {}
    for _ in range(a.samples):
        pick = rng.random() * total
        chosen = classes[-1]
        for c in classes:
            pick -= c[1]
            if pick < 0:
                chosen = c
                break
        words = rng.randint(chosen[2], chosen[3])
        output = rng.randint(chosen[4], chosen[5])
        prompt = math.ceil(words * a.tokens_per_word)
        key = (bucket(prompt), bucket(output))
        counts[key] = counts.get(key, 0) + 1
    cells = [{"prompt_tokens": bucket_tokens(k[0]), "output_tokens": bucket_tokens(k[1]),
              "rps": a.rate * n / a.samples} for k, n in sorted(counts.items())]
    print(json.dumps({"model": a.model, "cells": cells}))


if __name__ == "__main__":
    main()
