#!/usr/bin/env python3
"""Writes the golden vectors of vLLM's block hashes for kvindex's hasher tests.

Each vector is computed here the way vLLM's kv_cache_utils computes a request's block hashes
(hash_block_tokens over (parent, tuple(tokens), extra_keys), parent_0 = NONE_HASH = hash(seed)),
with the hash functions of vllm/utils/hashing.py written out from the standard library:

  sha256      SHA-256 of pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
  sha256_cbor SHA-256 of cbor2.dumps(obj, canonical=True)
  xxhash      XXH3-128 of the same pickle bytes
  xxhash_cbor XXH3-128 of the same canonical CBOR

The seed is vLLM's resolve_none_hash_seed: PYTHONHASHSEED as a string when set, otherwise
"vllm-none-hash" for sha256 and sha256_cbor (xxhash without PYTHONHASHSEED is random per process,
so it has no vector). Events carry the last 8 bytes of each digest as an unsigned integer.

Run with Debian's python3 and its python3-xxhash and python3-cbor2 packages:
  python3 vllm/src/test/python/vllm_block_hashes.py > vllm/src/test/resources/hash/vllm-block-hashes.json
"""

import hashlib
import json
import pickle
import random

import cbor2
import xxhash

DEFAULT_NONE_HASH_SEED = "vllm-none-hash"


def pickle_bytes(obj):
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def cbor_bytes(obj):
    return cbor2.dumps(obj, canonical=True)


HASH_FUNCTIONS = {
    "sha256": lambda obj: hashlib.sha256(pickle_bytes(obj)).digest(),
    "sha256_cbor": lambda obj: hashlib.sha256(cbor_bytes(obj)).digest(),
    "xxhash": lambda obj: xxhash.xxh3_128_digest(pickle_bytes(obj)),
    "xxhash_cbor": lambda obj: xxhash.xxh3_128_digest(cbor_bytes(obj)),
}


def block_hashes(algo, seed, block_size, tokens, extra_keys_of_block):
    fn = HASH_FUNCTIONS[algo]
    none_hash = fn(seed)
    parent = None
    out = []
    for block in range(len(tokens) // block_size):
        chunk = tokens[block * block_size : (block + 1) * block_size]
        parent = fn((parent or none_hash, tuple(chunk), extra_keys_of_block(block)))
        out.append(str(int.from_bytes(parent[-8:], "big")))
    return none_hash.hex(), out


def request_keys(lora=None, salt=None, mm=(), embeds=None, block_size=16):
    """extra keys per block as vLLM's generate_block_hash_extra_keys builds them"""

    def keys(block):
        start, end = block * block_size, (block + 1) * block_size
        lora_keys = [lora] if lora is not None else []
        mm_keys = [
            (identifier, offset - start)
            for identifier, offset, length in mm
            if end > offset and start < offset + length
        ]
        salt_keys = [salt] if (start == 0 and salt) else []
        embed_keys = [embeds[block]] if embeds is not None and block < len(embeds) else []
        extra = lora_keys + mm_keys + salt_keys + embed_keys
        return tuple(extra) if extra else None

    return keys


def main():
    rng = random.Random(20261206)
    cases = []

    def case(name, algo, seed, block_size, tokens, **extra):
        none_hash, hashes = block_hashes(
            algo, seed, block_size, tokens, request_keys(block_size=block_size, **extra)
        )
        entry = {
            "name": name,
            "algo": algo,
            "seed": seed,
            "block_size": block_size,
            "tokens": tokens if tokens is not long_run else {"count": 20_000, "times": 7919, "mod": 200_003},
            "none_hash": none_hash,
            "hashes": hashes,
        }
        for key in ("lora", "salt"):
            if extra.get(key) is not None:
                entry[key] = extra[key]
        if extra.get("mm"):
            entry["mm"] = [list(item) for item in extra["mm"]]
        if extra.get("embeds") is not None:
            entry["embeds"] = [digest.hex() for digest in extra["embeds"]]
        cases.append(entry)

    counting = list(range(64))
    # Token ids at every pickle integer width: BININT1 (< 256), BININT2 (< 65536), BININT.
    edges = [0, 1, 255, 256, 257, 65535, 65536, 65537, 151643, 2**31 - 1] * 4 + [7] * 8
    wide = [rng.randrange(0, 200_000) for _ in range(160)]
    long_run = [i * 7919 % 200_003 for i in range(20_000)]  # the test rebuilds it from this rule
    for algo in ("sha256", "sha256_cbor"):
        case(algo + " default seed", algo, DEFAULT_NONE_HASH_SEED, 16, counting)
        case(algo + " seed 0", algo, "0", 16, counting)
        case(algo + " seed 42, wide ids", algo, "42", 16, wide)
        case(algo + " empty seed", algo, "", 16, counting[:32])
        case(algo + " unicode seed", algo, "sé€d-🙂", 16, counting[:32])
        case(algo + " integer edges", algo, DEFAULT_NONE_HASH_SEED, 16, edges)
        case(algo + " block size 1", algo, DEFAULT_NONE_HASH_SEED, 1, counting[:5])
        case(algo + " block size 2 (two-item tuples)", algo, "7", 2, counting[:8])
        case(algo + " block size 3 (three-item tuples)", algo, "7", 3, counting[:9])
        case(algo + " block size 4", algo, "7", 4, counting[:12])
        case(algo + " lora", algo, DEFAULT_NONE_HASH_SEED, 16, counting, lora="sql-adapter")
        case(algo + " cache salt", algo, DEFAULT_NONE_HASH_SEED, 16, counting, salt="tenant-7")
        case(algo + " one-char lora and salt", algo, "1", 16, counting, lora="a", salt="a")
        case(
            algo + " multimodal",
            algo,
            DEFAULT_NONE_HASH_SEED,
            16,
            counting,
            mm=[("img-3f2a", 5, 20), ("img-77", 30, 4), ("img-3f2a", 40, 3)],
        )
        case(
            algo + " all extra keys",
            algo,
            "42",
            16,
            counting,
            lora="adapter",
            salt="salt",
            mm=[("clip", 3, 40)],
            embeds=[hashlib.sha256(bytes([b])).digest() for b in range(4)],
        )
    # Pickles over 64 KiB: split into frames, and a string written outside them (CBOR has no frames).
    case("sha256 long strings", "sha256", "s" * 300, 16, counting[:32], lora="L" * 70000)
    case("sha256 block size 20000 (two frames)", "sha256", "0", 20000, long_run)
    for algo in ("xxhash", "xxhash_cbor"):
        case(algo + " seed 0", algo, "0", 16, counting)
        case(algo + " seed 42, lora, salt", algo, "42", 16, wide, lora="x", salt="y")
    json.dump({"cases": cases}, fp=__import__("sys").stdout, indent=None, separators=(",", ":"))
    print()


if __name__ == "__main__":
    main()
