#!/usr/bin/env python3
"""make_vectors.py: builds the reference vectors under tests/vectors/ (see tests/vectors/README.md).

Tiny random MuseGlimmerForConditionalGeneration models (with a tiny vision tower, so checkpoints
have the real layout) are saved in the Hugging Face bf16 layout (by transformers' own
save_pretrained) and in the MLX affine-quantized layout (by scripts/mlx_quantize.py), and
transformers computes reference logits for each in fp32 with attn_implementation="eager".

Needs python3 with torch, transformers (with Muse Glimmer, tested against 5.17.0), numpy.
Everything runs on the CPU in well under a minute.

    python3 scripts/make_vectors.py [--out tests/vectors] [--only hf_a,mlx4_a] [--seed N]
    python3 scripts/make_vectors.py --selftest     # numpy-only checks, no torch needed

Exit status 1 when a core fixture (hf_a, hf_b, mlx4_a, mlx8_b) could not be made; the other
fixtures are reported as FAILED in the summary without failing the run.
"""
import argparse
import copy
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import traceback
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlx_quantize as mq  # noqa: E402

DEFAULT_SEED = 20260901
N_GREEDY = 8
BOS_ID, EOS_IDS, PAD_ID = 0, [1, 8], 18
RELEASE_MULTIPLIER = 0.19611613513818404

# ------------------------------------------------------------------------------------------------
# Fixtures. Shapes are PyTorch [out, in]; every quantized module's input width is a multiple of its
# group size. "base" fixtures share the shape, the weights and the prompt of another fixture.
# layer pattern: full attention (NoPE) iff (L-1-i) % 4 == 0, counted from the END (MODEL.md 1.1).

SPECS = [
    dict(name="hf_a", layout="hf", core=True,
         purpose="bf16 HF layout; GQA 4/2, head_dim 16, hidden 128 != 4*16; 6 layers (full at 1, 5); "
                 "window 4",
         L=6, hidden=128, heads=4, kv=2, hd=16, inter=128, vocab=384, window=4, T=24),
    dict(name="hf_b", layout="hf", core=True, sharded=True,
         purpose="bf16 HF layout in two shards + index; GQA 8/1, head_dim 32, hidden 64 != 8*32; "
                 "5 layers (full at 0, 4); window 8; rope theta 1000",
         L=5, hidden=64, heads=8, kv=1, hd=32, inter=96, vocab=300, window=8, T=40, theta=1000.0),
    dict(name="mlx4_a", layout="mlx", core=True, base="hf_a",
         purpose="MLX 4-bit g64 (bf16 scales) of hf_a's weights, embedding quantized",
         quant=dict(group_size=64, bits=4)),
    dict(name="mlx8_b", layout="mlx", core=True, base="hf_b",
         purpose="MLX 8-bit g32 (bf16 scales) of hf_b's weights, embedding quantized",
         quant=dict(group_size=32, bits=8)),
    dict(name="mlx4_c", layout="mlx",
         purpose="MLX 4-bit g128, embedding NOT quantized (bf16), per-module override layer 1 "
                 "down_proj 8-bit g32; GQA 4/4, head_dim 32, hidden 256 != 4*32; window 6",
         L=4, hidden=256, heads=4, kv=4, hd=32, inter=128, vocab=512, window=6, T=28,
         quant=dict(group_size=128, bits=4, quantize_embed=False,
                    overrides={"language_model.model.layers.1.mlp.down_proj":
                               {"group_size": 32, "bits": 8}})),
    dict(name="eps_swap", layout="hf",
         purpose="rms_norm_eps 1e-2, post_norm_eps 1e-6 and o_proj/down_proj x0.01 so the post-norm "
                 "inputs are tiny: swapping or hard-coding either epsilon changes the logits; "
                 "GQA 6/2 (ratio 3), hidden 96 == 6*16; 7 layers (full at 2, 6)",
         L=7, hidden=96, heads=6, kv=2, hd=16, inter=160, vocab=320, window=4, T=20,
         rms_eps=1e-2, post_eps=1e-6, o_scale=0.01, down_scale=0.01),
    dict(name="head_order", layout="hf",
         purpose="final_logit_softcapping 2.0 and output_multiplier 0.7: multiplier-then-softcap "
                 "order, both constants read from config; GQA 2/1, head_dim 32, hidden 96; "
                 "3 layers (full at 2 only)",
         L=3, hidden=96, heads=2, kv=1, hd=32, inter=64, vocab=448, window=8, T=24,
         softcap=2.0, mult=0.7, head_std=1.5),
    dict(name="mlx_bits", layout="mlx",
         purpose="MLX 3-bit g64 with f16 scales/biases, overrides: layer 0 up_proj 5-bit g32, "
                 "layer 1 o_proj 6-bit g64, lm_head 2-bit g32 (optional widths; an engine without "
                 "them should refuse with GLIM_E_UNSUPPORTED)",
         L=2, hidden=64, heads=4, kv=2, hd=16, inter=128, vocab=320, window=4, T=20,
         quant=dict(group_size=64, bits=3, scale_dtype="f16",
                    overrides={"language_model.model.layers.0.mlp.up_proj": {"group_size": 32, "bits": 5},
                               "language_model.model.layers.1.self_attn.o_proj": {"group_size": 64, "bits": 6},
                               "language_model.lm_head": {"group_size": 32, "bits": 2}})),
]

SHAPE_DEFAULTS = dict(theta=500000.0, rms_eps=1e-5, post_eps=1e-8, softcap=20.0,
                      mult=RELEASE_MULTIPLIER, head_std=30.0, o_scale=1.0, down_scale=1.0,
                      max_pos=256)


def resolved(spec):
    """The spec with its base's shape fields and the defaults filled in."""
    by_name = {s["name"]: s for s in SPECS}
    out = dict(SHAPE_DEFAULTS)
    if "base" in spec:
        out.update({k: v for k, v in by_name[spec["base"]].items()
                    if k not in ("name", "layout", "core", "sharded", "purpose", "quant")})
    out.update(spec)
    out.setdefault("core", False)
    out["weights_from"] = spec.get("base", spec["name"])
    return out


def layer_types(L):
    return ["full_attention" if (L - 1 - i) % 4 == 0 else "sliding_attention" for i in range(L)]


def layer_thetas(L, theta):
    return [0 if (L - 1 - i) % 4 == 0 else float(theta) for i in range(L)]


# ------------------------------------------------------------------------------------------------
# safetensors, numpy only (so the MLX files and the shards are byte-for-byte under our control)

ST_NP = {"BOOL": "u1", "U8": "u1", "I8": "i1", "U16": "<u2", "I16": "<i2", "F16": "<f2",
         "BF16": "<u2", "U32": "<u4", "I32": "<i4", "F32": "<f4", "U64": "<u8", "I64": "<i8",
         "F64": "<f8"}


def st_write(path, tensors, metadata=None):
    """tensors: list of (name, safetensors dtype, array); BF16 arrays are uint16 bit patterns.
    8-byte aligned header (space padded), data in the given order, written via path.tmp."""
    header, blobs, offset, seen = {}, [], 0, set()
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, dt, arr in tensors:
        if name in seen:
            raise ValueError("duplicate tensor name %s" % name)
        seen.add(name)
        arr = np.asarray(arr)
        if dt == "BF16" and arr.dtype != np.uint16:
            raise ValueError("%s: BF16 data must be uint16 bit patterns, got %s" % (name, arr.dtype))
        a = np.ascontiguousarray(arr.astype(ST_NP[dt], copy=False))
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": [int(d) for d in a.shape],
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return offset


def st_read(path):
    """-> ({name: (dtype, array)} in file order, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    base, out = 8 + n, {}
    for name, info in header.items():
        s, e = info["data_offsets"]
        arr = np.frombuffer(data[base + s:base + e], dtype=ST_NP[info["dtype"]])
        out[name] = (info["dtype"], arr.reshape(info["shape"]))
    return out, meta


def st_read_dir(d):
    """A checkpoint directory: model.safetensors.index.json with shards, or model.safetensors."""
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            wm = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(wm.values())):
            tensors, _ = st_read(os.path.join(d, shard))
            out.update(tensors)
        missing = set(wm) - set(out)
        if missing:
            raise ValueError("index lists tensors absent from the shards: %s" % sorted(missing)[:5])
        return out
    return st_read(os.path.join(d, "model.safetensors"))[0]


def write_index(d, shard_of, sizes):
    """model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {...}}."""
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": int(sum(sizes.values()))},
                   "weight_map": {k: shard_of[k] for k in sorted(shard_of)}}, f, indent=2)
        f.write("\n")


def shard_in_two(d):
    """Rewrites d's checkpoint (one model.safetensors, or whatever shards save_pretrained made) as
    exactly two shards + index (sorted names, split at half the bytes), keeping the metadata."""
    tensors = st_read_dir(d)
    old = [f for f in os.listdir(d) if f.endswith(".safetensors") or f == "model.safetensors.index.json"]
    first = sorted(f for f in old if f.endswith(".safetensors"))[0]
    meta = st_read(os.path.join(d, first))[1] or {"format": "pt"}
    names = sorted(tensors)
    sizes = {n: tensors[n][1].nbytes for n in names}
    total, acc, cut = sum(sizes.values()), 0, len(names) - 1
    for i, n in enumerate(names):
        acc += sizes[n]
        if acc >= total / 2:
            cut = min(max(i + 1, 1), len(names) - 1)
            break
    for f in old:
        os.remove(os.path.join(d, f))
    parts = [names[:cut], names[cut:]]
    shard_of = {}
    for k, part in enumerate(parts):
        fname = "model-%05d-of-%05d.safetensors" % (k + 1, len(parts))
        st_write(os.path.join(d, fname), [(n, tensors[n][0], tensors[n][1]) for n in part], meta)
        shard_of.update({n: fname for n in part})
    write_index(d, shard_of, sizes)
    return [len(p) for p in parts]


# ------------------------------------------------------------------------------------------------
# weights: every tensor random, seeded by (seed, fixture weights name, tensor name)

TEXT = "model.language_model."
CENTRED_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm")
LAYER_RE = re.compile(r"^model\.language_model\.layers\.(\d+)\.(.+)\.weight$")
PROJ_IN = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.gate_proj",
           "mlp.gate_proj", "mlp.up_proj")


def gen_weight(spec, seed, name, shape):
    """fp32 values exactly representable in bf16."""
    rng = np.random.default_rng([seed, zlib.crc32(spec["weights_from"].encode()),
                                 zlib.crc32(name.encode())])
    normal = lambda std: rng.standard_normal(shape) * std  # noqa: E731
    fan_in = shape[-1]
    if name == TEXT + "embed_tokens.weight":
        w = normal(1.0)
    elif name == TEXT + "norm.weight":
        w = 1.0 + normal(0.3)  # plain gain w
    elif name == "lm_head.weight":
        w = normal(spec["head_std"] / np.sqrt(fan_in))
    elif name.startswith(TEXT):
        m = LAYER_RE.match(name)
        if not m:
            raise ValueError("unexpected text tensor %s %s" % (name, shape))
        sub = m.group(2)
        if sub in CENTRED_NORMS:
            w = normal(0.3)  # zero-centred, gain 1+w
        elif sub in PROJ_IN:
            w = normal(1.0 / np.sqrt(fan_in))
        elif sub == "self_attn.o_proj":
            w = normal(spec["o_scale"] / np.sqrt(fan_in))
        elif sub == "mlp.down_proj":
            w = normal(spec["down_scale"] / np.sqrt(fan_in))
        else:
            raise ValueError("unexpected text tensor %s %s" % (name, shape))
    elif name.startswith("lm_head"):
        raise ValueError("unexpected head tensor %s" % name)
    elif name.endswith(".bias"):
        w = normal(0.02)
    elif len(shape) == 1:
        w = 1.0 + normal(0.05)  # vision LayerNorm gains
    else:
        w = normal(1.0 / np.sqrt(fan_in))
    return mq.round_to(np.asarray(w, dtype=np.float32), "bf16")


def expected_text_names(L):
    names = {TEXT + "embed_tokens.weight", TEXT + "norm.weight", "lm_head.weight"}
    subs = CENTRED_NORMS + PROJ_IN + ("self_attn.o_proj", "mlp.down_proj")
    for i in range(L):
        names |= {"%slayers.%d.%s.weight" % (TEXT, i, s) for s in subs}
    return names


def check_hf_layout(tensors, spec):
    """The saved checkpoint must have the layout MODEL.md 3.1 describes, or the fixture is
    useless to the engine: fail loudly."""
    names = set(tensors)
    want = expected_text_names(spec["L"])
    text = {n for n in names if n.startswith(TEXT) or n.startswith("lm_head")}
    if text != want:
        raise RuntimeError("saved HF text tensors differ from MODEL.md 3.1: missing %s, extra %s"
                           % (sorted(want - text)[:6], sorted(text - want)[:6]))
    for n, (dt, _) in tensors.items():
        if dt != "BF16":
            raise RuntimeError("saved tensor %s is %s, expected BF16" % (n, dt))
    other = sorted(names - text)
    prefixes = sorted({n.split(".")[1] for n in other})
    if prefixes != ["vision_adapter", "vision_projection", "vision_tower"]:
        raise RuntimeError("unexpected non-text tensors: prefixes %s" % prefixes)
    return len(text), len(other)


# ------------------------------------------------------------------------------------------------
# MLX layout (numpy only)

Q_LAYER_RE = re.compile(r"^model\.language_model\.layers\.\d+\.(self_attn\.(q|k|v|o|gate)_proj|"
                        r"mlp\.(gate|up|down)_proj)\.weight$")


def hf_to_mlx_name(name):
    """mlx-vlm's rename (MODEL.md 3.2)."""
    if name.startswith("model.language_model."):
        return "language_model.model." + name[len("model.language_model."):]
    if name.startswith("model.vision_"):
        return name[len("model."):]
    if name.startswith("lm_head."):
        return "language_model." + name
    raise ValueError("no MLX name for %s" % name)


def mlx_quantized(name, quantize_embed):
    if name == TEXT + "embed_tokens.weight":
        return quantize_embed
    return (name == "lm_head.weight" or bool(Q_LAYER_RE.match(name))
            or name in ("model.vision_adapter.fc1.weight", "model.vision_adapter.fc2.weight",
                        "model.vision_projection.weight"))


def mlx_convert(hf_tensors, quant):
    """hf_tensors: {HF name: ("BF16", uint16 array)} -> (MLX tensor list, {HF name: fp32 weight
    the stored bits define}, quantization block, per-module report)."""
    g0, b0 = quant["group_size"], quant["bits"]
    sdt = quant.get("scale_dtype", "bf16")
    overrides = quant.get("overrides", {})
    qembed = quant.get("quantize_embed", True)
    out, deq, report, used = [], {}, {}, set()
    for name in sorted(hf_tensors):
        dt, arr = hf_tensors[name]
        if dt != "BF16":
            raise ValueError("%s is %s, expected BF16" % (name, dt))
        w = mq.bf16_bits_to_f32(arr)
        mname = hf_to_mlx_name(name)
        if mlx_quantized(name, qembed):
            module = mname[:-len(".weight")]
            ov = overrides.get(module)
            if ov:
                used.add(module)
            g, b = (ov["group_size"], ov["bits"]) if ov else (g0, b0)
            if w.ndim != 2 or w.shape[1] % g:
                raise ValueError("%s shape %s cannot take group size %d" % (name, w.shape, g))
            qt = mq.quantize(w, g, b, sdt)
            out.append((module + ".weight", "U32", qt.packed))
            out.append((module + ".scales",) + mq.encode(qt.scales, sdt))
            out.append((module + ".biases",) + mq.encode(qt.biases, sdt))
            deq[name] = qt.dequantize()
            report[module] = (b, g)
        else:
            out.append((mname, "BF16", arr))
            deq[name] = w
    unknown = set(overrides) - used
    if unknown:
        raise ValueError("overrides name no quantized module: %s" % sorted(unknown))
    block = {"group_size": g0, "bits": b0, "mode": "affine"}
    for k in sorted(overrides):
        block[k] = {"group_size": overrides[k]["group_size"], "bits": overrides[k]["bits"]}
    return out, deq, block, report


def write_mlx_dir(d, hf_config, tensors, block):
    cfg = copy.deepcopy(hf_config)
    cfg["quantization"] = copy.deepcopy(block)
    cfg["quantization_config"] = copy.deepcopy(block)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    st_write(os.path.join(d, "model.safetensors"), tensors, {"format": "mlx"})
    sizes = {n: np.asarray(a).nbytes for n, _, a in tensors}
    write_index(d, {n: "model.safetensors" for n in sizes}, sizes)


def write_generation_config(d, max_length, version):
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": BOS_ID, "do_sample": False, "eos_token_id": EOS_IDS,
                   "max_length": max_length, "pad_token_id": PAD_ID,
                   "transformers_version": version}, f, indent=2, sort_keys=True)
        f.write("\n")


def make_tokens(spec, seed):
    rng = np.random.default_rng([seed, zlib.crc32(("tokens:" + spec["weights_from"]).encode())])
    t = rng.integers(0, spec["vocab"], size=spec["T"]).astype(np.int64)
    t[0] = BOS_ID
    return t


# ------------------------------------------------------------------------------------------------
# torch / transformers side (imported lazily so --selftest runs without torch)

class HF:
    def __init__(self):
        import torch
        import transformers
        self.torch, self.transformers = torch, transformers
        from transformers import MuseGlimmerForConditionalGeneration
        try:
            from transformers.models.muse_glimmer.configuration_muse_glimmer import (
                MuseGlimmerConfig, MuseGlimmerTextConfig, MuseGlimmerVisionConfig)
        except ImportError:
            from transformers import MuseGlimmerConfig, MuseGlimmerTextConfig, MuseGlimmerVisionConfig
        self.Model = MuseGlimmerForConditionalGeneration
        self.Config, self.TextConfig, self.VisionConfig = (MuseGlimmerConfig, MuseGlimmerTextConfig,
                                                           MuseGlimmerVisionConfig)

    def config(self, spec):
        L = spec["L"]
        text = self.TextConfig(
            vocab_size=spec["vocab"], hidden_size=spec["hidden"], intermediate_size=spec["inter"],
            num_hidden_layers=L, num_attention_heads=spec["heads"],
            num_key_value_heads=spec["kv"], head_dim=spec["hd"], hidden_activation="silu",
            max_position_embeddings=spec["max_pos"], initializer_range=0.02,
            rms_norm_eps=spec["rms_eps"], post_norm_eps=spec["post_eps"], use_cache=True,
            pad_token_id=None, bos_token_id=BOS_ID, eos_token_id=list(EOS_IDS),
            tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": float(spec["theta"])},
            attention_bias=False, attention_dropout=0.0, sliding_window=spec["window"],
            layer_types=layer_types(L), layer_rope_theta=layer_thetas(L, spec["theta"]),
            final_logit_softcapping=float(spec["softcap"]), qk_scale_factor=3.87,
            output_multiplier=float(spec["mult"]))
        # tiny vision tower: hidden 32, 2 heads, 2 layers, 2x2 merge -> out_hidden_size 128
        vision = self.VisionConfig(
            patch_size=2, pos_emb_height=4, pos_emb_width=4, num_attention_heads=2,
            num_hidden_layers=2, hidden_size=32, intermediate_size=48, hidden_act="gelu",
            max_position_embeddings=16, patch_temporal=2, merge_size=2, layer_norm_eps=1e-5)
        top = dict(text_config=text, vision_config=vision, out_hidden_size=128,
                   projector_hidden_size=128, projector_hidden_act="gelu")
        try:
            cfg = self.Config(tie_word_embeddings=False, **top)
        except Exception as e:  # the composite config may not take the field: text_config has it
            print("    note: MuseGlimmerConfig(tie_word_embeddings=False) refused (%s); "
                  "relying on text_config.tie_word_embeddings=False" % e)
            cfg = self.Config(**top)
        tc = cfg.text_config
        problems = []
        if list(tc.layer_types) != layer_types(L):
            problems.append("layer_types %s" % tc.layer_types)
        if [float(x) for x in tc.layer_rope_theta] != [float(x) for x in layer_thetas(L, spec["theta"])]:
            problems.append("layer_rope_theta %s" % tc.layer_rope_theta)
        if float(tc.rope_parameters["rope_theta"]) != float(spec["theta"]):
            problems.append("rope_parameters %s" % tc.rope_parameters)
        for field, want in (("rms_norm_eps", spec["rms_eps"]), ("post_norm_eps", spec["post_eps"]),
                            ("final_logit_softcapping", spec["softcap"]),
                            ("output_multiplier", spec["mult"]), ("sliding_window", spec["window"]),
                            ("head_dim", spec["hd"]), ("tie_word_embeddings", False)):
            if getattr(tc, field) != want:
                problems.append("%s = %r, wanted %r" % (field, getattr(tc, field), want))
        if problems:
            raise RuntimeError("config did not keep: " + "; ".join(problems))
        return cfg

    def model_with(self, cfg, weights):
        """A float32 model from cfg holding exactly `weights` ({name: fp32 array})."""
        torch = self.torch
        model = self.Model(cfg).to(torch.float32).eval()
        sd = model.state_dict()
        if set(sd) != set(weights):
            raise RuntimeError("state_dict names differ from the weights: missing %s, extra %s"
                               % (sorted(set(sd) - set(weights))[:5], sorted(set(weights) - set(sd))[:5]))
        for n, t in sd.items():
            if tuple(t.shape) != tuple(weights[n].shape):
                raise RuntimeError("%s: model shape %s, weight shape %s"
                                   % (n, tuple(t.shape), weights[n].shape))
        model.load_state_dict({n: torch.from_numpy(np.ascontiguousarray(w)) for n, w in weights.items()},
                              strict=True)
        head = model.lm_head.weight
        emb = model.model.language_model.embed_tokens.weight
        if head.data_ptr() == emb.data_ptr() or (head.shape == emb.shape and torch.equal(head, emb)):
            raise RuntimeError("lm_head is tied to embed_tokens; the release is untied")
        return model

    def load_reference(self, d):
        torch = self.torch
        ref = self.Model.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
        impl = getattr(ref.config.text_config, "_attn_implementation", None)
        if impl != "eager":
            print("    WARNING: text_config._attn_implementation = %r after from_pretrained; forcing "
                  "eager" % impl)
            try:
                ref.set_attn_implementation("eager")
            except Exception:
                ref.config.text_config._attn_implementation = "eager"
            impl = getattr(ref.config.text_config, "_attn_implementation", None)
            if impl != "eager":
                raise RuntimeError("could not get eager attention (have %r)" % impl)
        return ref

    def verify_weights(self, ref, weights):
        """Every tensor of the loaded model must equal what we meant it to hold."""
        torch = self.torch
        sd = ref.state_dict()
        bad = []
        for n, w in weights.items():
            t = sd.get(n)
            if t is None or t.dtype != torch.float32 or not torch.equal(t, torch.from_numpy(w)):
                bad.append(n)
        if bad:
            raise RuntimeError("loaded model differs from the intended weights in %d tensors, e.g. %s"
                               % (len(bad), bad[:4]))

    def forward(self, model, tokens, **kw):
        torch = self.torch
        with torch.no_grad():
            return model(input_ids=torch.tensor([list(tokens)], dtype=torch.long), **kw)


# ------------------------------------------------------------------------------------------------
# reference computation and self-checks


def compute_reference(hf, ref, spec, tokens):
    torch = hf.torch
    lm = ref.model.language_model
    L, T = spec["L"], len(tokens)
    res, meta = {}, {}

    raw_last = {}
    hook = lm.layers[L - 1].register_forward_hook(
        lambda m, a, o: raw_last.__setitem__("x", (o[0] if isinstance(o, tuple) else o).detach().clone()))
    try:
        out = hf.forward(ref, tokens, use_cache=False, output_hidden_states=True)
    except Exception as e:
        print("    WARNING: output_hidden_states=True failed (%s); no hidden_states stored" % e)
        out = hf.forward(ref, tokens, use_cache=False)
    hook.remove()
    logits = out.logits[0].detach().float().numpy().astype(np.float32)
    res["tokens"] = ("I64", np.asarray(tokens, dtype=np.int64))
    res["logits"] = ("F32", logits)

    hs = getattr(out, "hidden_states", None)
    if hs is None or len(hs) != L + 1:
        print("    WARNING: hidden_states has %s entries, expected L+1 = %d"
              % (None if hs is None else len(hs), L + 1))
    if hs is not None:
        res["hidden_states"] = ("F32", np.stack([h[0].float().numpy() for h in hs]).astype(np.float32))
    if "x" in raw_last:
        x = raw_last["x"].float()
        res["last_layer_output"] = ("F32", x.reshape(-1, x.shape[-1]).numpy().astype(np.float32))
    res["inv_freq"] = ("F32", lm.rotary_emb.inv_freq.detach().float().numpy().astype(np.float32))
    if lm.rotary_emb.inv_freq.dtype != torch.float32:
        print("    WARNING: rotary inv_freq dtype is %s" % lm.rotary_emb.inv_freq.dtype)

    # fp64 run (HF's norms and softmax still compute in fp32 inside, so it is not a pure fp64
    # reference; it shows the size of the fp32 GEMM-order noise)
    try:
        m64 = copy.deepcopy(ref).to(torch.float64)
        l64 = hf.forward(m64, tokens, use_cache=False).logits[0].detach().numpy().astype(np.float64)
        res["logits_f64"] = ("F64", l64)
        meta["fp32_vs_f64_max_abs"] = float(np.max(np.abs(l64 - logits)))
        del m64
    except Exception as e:
        print("    note: fp64 run skipped: %s" % e)

    # greedy continuation: HF decode with the KV cache, cross-checked by full forwards
    greedy, glog = [], []
    out = hf.forward(ref, tokens, use_cache=True)
    past, row = out.past_key_values, out.logits[0, -1].float().numpy()
    for k in range(N_GREEDY):
        tok = int(np.argmax(row))  # first maximal index
        greedy.append(tok)
        glog.append(row.astype(np.float32))
        if k + 1 < N_GREEDY:
            with torch.no_grad():
                out = ref(input_ids=torch.tensor([[tok]], dtype=torch.long), past_key_values=past,
                          use_cache=True)
            past, row = out.past_key_values, out.logits[0, -1].float().numpy()
    full = hf.forward(ref, list(tokens) + greedy[:-1], use_cache=False).logits[0].float().numpy()
    full_rows = full[T - 1:]
    tol = 1e-4 * max(1.0, float(np.max(np.abs(logits))))
    cache_diff = float(np.max(np.abs(full_rows - np.stack(glog))))
    full_greedy = [int(np.argmax(r)) for r in full_rows]
    meta["greedy_cache_vs_full_max_abs"] = cache_diff
    meta["greedy_source"] = "hf_kv_cache_decode"
    if cache_diff > tol or full_greedy != greedy:
        print("    WARNING: cached decode vs full forward: max diff %.3g, tokens %s vs %s; storing the "
              "full-forward rows" % (cache_diff, greedy, full_greedy))
        meta["greedy_source"] = "full_forward (cached decode disagreed)"
        greedy, glog = [], []
        seq = list(tokens)
        for k in range(N_GREEDY):
            r = hf.forward(ref, seq, use_cache=False).logits[0, -1].float().numpy()
            greedy.append(int(np.argmax(r)))
            glog.append(r.astype(np.float32))
            seq.append(greedy[-1])
    res["greedy"] = ("I64", np.asarray(greedy, dtype=np.int64))
    res["greedy_logits"] = ("F32", np.stack(glog).astype(np.float32))
    return res, meta


def self_checks(hf, ref, spec, tokens, res, weights):
    """Checks of our reading of the model (fail loudly) and how strongly this fixture reacts to each
    known pitfall (reported; UNDETECTED when a bug would stay under the test tolerance)."""
    torch = hf.torch
    logits = res["logits"][1]
    cap, mult = spec["softcap"], spec["mult"]
    maxabs = float(np.max(np.abs(logits)))
    tol = 1e-4 * max(1.0, maxabs)
    if not maxabs <= cap:
        raise RuntimeError("max |logit| %.6g exceeds the softcap %g" % (maxabs, cap))
    if not np.all(np.isfinite(logits)):
        raise RuntimeError("non-finite logits")

    # Our reading of HF (MODEL.md 2.1, 2.4) and of its hidden_states indexing (README). A mismatch
    # does not spoil the fixture (the logits are HF's own), but the README or MODEL.md would be
    # wrong: it is reported loudly and recorded in the manifest.
    checks, warnings = {}, []
    f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    if "last_layer_output" in res:
        x = f64(res["last_layer_output"][1])
        fn = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + spec["rms_eps"]) * f64(weights[TEXT + "norm.weight"])
        z = fn @ f64(weights["lm_head.weight"]).T
        checks["logits vs cap*tanh(mult*norm(x)W/cap)"] = float(np.max(np.abs(cap * np.tanh(z * mult / cap) - logits)))
        if "hidden_states" in res:
            checks["hidden_states[L] vs norm(last layer)"] = float(np.max(np.abs(res["hidden_states"][1][-1] - fn)))
    if "hidden_states" in res:
        e = f64(weights[TEXT + "embed_tokens.weight"][np.asarray(tokens)])
        en = e / np.sqrt(np.mean(e * e, axis=1, keepdims=True) + spec["rms_eps"])
        checks["hidden_states[0] vs embed+norm"] = float(np.max(np.abs(res["hidden_states"][1][0] - en)))
    for k, v in checks.items():
        ok = v <= 1e-3 * max(1.0, maxabs)
        print("    check %-40s max abs %.3g %s" % (k, v, "ok" if ok else "MISMATCH"))
        if not ok:
            warnings.append("%s: %.3g" % (k, v))
            print("    WARNING: self-check %r failed: README/MODEL.md's reading of HF is wrong here" % k)

    sens = {}

    def variant(label, mutate):
        try:
            m = copy.deepcopy(ref)
            mutate(m, m.model.language_model)
            alt = hf.forward(m, tokens, use_cache=False).logits[0].float().numpy()
            sens[label] = float(np.max(np.abs(alt - logits)))
        except Exception as e:
            sens[label] = None
            print("    note: pitfall %r not evaluated: %s" % (label, e))

    def set_eps(pre, post):
        def f(m, lm):
            for layer in lm.layers:
                layer.input_layernorm.eps = pre
                layer.pre_feedforward_layernorm.eps = pre
                layer.post_attention_layernorm.eps = post
                layer.post_feedforward_layernorm.eps = post
        return f

    def add_to(selector, delta):
        def f(m, lm):
            with torch.no_grad():
                for p in selector(lm):
                    p.add_(delta)
        return f

    def set_cfg(field, value):
        def f(m, lm):
            setattr(lm.config, field, value)
        return f

    def set_inv_freq(theta):
        def f(m, lm):
            hd = spec["hd"]
            inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float) / hd))
            lm.rotary_emb.inv_freq.copy_(inv)
            lm.rotary_emb.original_inv_freq.copy_(inv)
        return f

    def qk_scale(v):
        def f(m, lm):
            for layer in lm.layers:
                layer.self_attn.qk_scale_factor = v
        return f

    def no_embed_norm(m, lm):
        lm.embed_tokens.embed_norm = torch.nn.Identity()

    L, W, theta = spec["L"], spec["window"], spec["theta"]
    variant("epsilons swapped", set_eps(spec["post_eps"], spec["rms_eps"]))
    variant("post eps = rms eps", set_eps(spec["rms_eps"], spec["rms_eps"]))
    variant("eps hard-coded 1e-5/1e-8", set_eps(1e-5, 1e-8))
    variant("final norm as (1+w)", add_to(lambda lm: [lm.norm.weight], 1.0))
    variant("layer norms as plain w", add_to(
        lambda lm: [getattr(l, n).weight for l in lm.layers for n in CENTRED_NORMS], -1.0))
    variant("RoPE on full layers too", set_cfg("layer_rope_theta", [float(theta)] * L))
    variant("no RoPE anywhere", set_cfg("layer_rope_theta", [0] * L))
    if float(theta) != 10000.0:
        variant("theta 10000 (default)", set_inv_freq(10000.0))
    variant("window W+1", set_cfg("sliding_window", W + 1))
    variant("window W-1", set_cfg("sliding_window", W - 1))
    variant("pattern counted from the start", set_cfg(
        "layer_types", ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(L)]))
    variant("no q x 3.87", qk_scale(1.0))
    variant("q x bf16(3.87)=3.875", qk_scale(3.875))
    variant("no embedding norm", no_embed_norm)
    if "last_layer_output" in res:
        sens["softcap before multiplier"] = float(np.max(np.abs(cap * np.tanh(z / cap) * mult - logits)))
        sens["no multiplier"] = float(np.max(np.abs(cap * np.tanh(z / cap) - logits)))
        sens["no softcap"] = float(np.max(np.abs(z * mult - logits)))
    for k, v in sens.items():
        if v is None:
            continue
        flag = "" if v > 10 * tol else ("  UNDETECTED (< 10x tol)" if v > 0 else "  NO EFFECT")
        print("    pitfall %-34s max |dlogit| %9.3g  (%6.0fx tol)%s" % (k, v, v / tol, flag))
    return checks, sens, warnings


# ------------------------------------------------------------------------------------------------
# one fixture


def make_fixture(hf, spec, seed, out_root, work):
    torch = hf.torch
    name = spec["name"]
    print("\n== %s (%s layout): %s" % (name, spec["layout"], spec["purpose"]))
    cfg = hf.config(spec)
    print("    text_config.layer_types     = %s" % list(cfg.text_config.layer_types))
    print("    text_config.layer_rope_theta = %s" % list(cfg.text_config.layer_rope_theta))
    print("    rope_parameters = %s, window %d, eps %g/%g, softcap %g, multiplier %.17g"
          % (dict(cfg.text_config.rope_parameters), spec["window"], spec["rms_eps"],
             spec["post_eps"], spec["softcap"], spec["mult"]))

    # the bf16 HF checkpoint, written by transformers itself
    shapes = {n: tuple(t.shape) for n, t in hf.Model(cfg).state_dict().items()}
    weights = {n: gen_weight(spec, seed, n, s) for n, s in shapes.items()}
    model = hf.model_with(cfg, weights)
    tmp = tempfile.mkdtemp(prefix=name + "_", dir=work)
    hf_dir = os.path.join(tmp, "hf")
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(hf_dir)
    hf_tensors = st_read_dir(hf_dir)
    n_text, n_other = check_hf_layout(hf_tensors, spec)
    for n, (dt, arr) in hf_tensors.items():
        if not np.array_equal(arr, mq.f32_to_bf16_bits(weights[n])):
            raise RuntimeError("save_pretrained wrote different values for %s" % n)
    with open(os.path.join(hf_dir, "config.json")) as f:
        hf_config = json.load(f)
    print("    saved by save_pretrained: %d text + %d vision tensors, all BF16; config dtype %r"
          % (n_text, n_other, hf_config.get("dtype", hf_config.get("torch_dtype"))))

    fixture = os.path.join(tmp, "fixture")
    info = {"name": name, "purpose": spec["purpose"], "core": spec["core"]}
    if spec["layout"] == "hf":
        shutil.copytree(hf_dir, fixture)
        write_generation_config(fixture, spec["max_pos"], hf.transformers.__version__)
        if spec.get("sharded"):
            counts = shard_in_two(fixture)
            print("    sharded: %s tensors per shard" % counts)
        ref_dir, intended = fixture, weights
        info.update(layout="huggingface", sharded=bool(spec.get("sharded")), quantization=None)
    else:
        q = spec["quant"]
        tensors, deq, block, report = mlx_convert(hf_tensors, q)
        os.makedirs(fixture)
        write_mlx_dir(fixture, hf_config, tensors, block)
        write_generation_config(fixture, spec["max_pos"], hf.transformers.__version__)
        widths = sorted({v for v in report.values()})
        print("    MLX: %d tensors, %d quantized modules, (bits, group) used %s, scales %s, embed %s"
              % (len(tensors), len(report), widths, q.get("scale_dtype", "bf16"),
                 "quantized" if q.get("quantize_embed", True) else "bf16"))
        # the reference runs on the exact fp32 function of the stored bits
        ref_dir = os.path.join(tmp, "ref_fp32")
        hf.model_with(cfg, deq).save_pretrained(ref_dir)
        intended = deq
        info.update(layout="mlx", sharded=False,
                    quantization={"group_size": q["group_size"], "bits": q["bits"],
                                  "scale_dtype": q.get("scale_dtype", "bf16"),
                                  "embedding_quantized": q.get("quantize_embed", True),
                                  "overrides": q.get("overrides", {}),
                                  "bits_used": sorted({b for b, _ in report.values()})})

    ref = hf.load_reference(ref_dir)
    hf.verify_weights(ref, intended)
    print("    from_pretrained(dtype=float32, attn_implementation='eager'): weights verified, attn %r"
          % ref.config.text_config._attn_implementation)

    tokens = make_tokens(spec, seed)
    res, meta = compute_reference(hf, ref, spec, tokens)
    checks, sens, warnings = self_checks(hf, ref, spec, tokens, res, intended)

    logits = res["logits"][1]
    maxabs = float(np.max(np.abs(logits)))
    metadata = {
        "generator": "scripts/make_vectors.py", "fixture": name, "seed": seed,
        "torch_version": torch.__version__, "transformers_version": hf.transformers.__version__,
        "numpy_version": np.__version__, "python_version": sys.version.split()[0],
        "device": "cpu", "dtype": "float32", "attn_implementation": "eager",
        "hidden_states_index": "0 = embedding after the weightless embed RMS norm (input of layer 0); "
                               "i = 1..L-1 = output of decoder layer i-1; L = final norm applied to "
                               "the output of layer L-1 (last_layer_output is that output unnormed)",
    }
    metadata.update({k: repr(v) if isinstance(v, float) else v for k, v in meta.items()})
    st_write(os.path.join(fixture, "reference.safetensors"),
             [(k, dt, arr) for k, (dt, arr) in res.items()], metadata)
    with open(os.path.join(fixture, "tokens.json"), "w") as f:
        json.dump({"tokens": [int(t) for t in tokens],
                   "greedy": [int(t) for t in res["greedy"][1]]}, f)
        f.write("\n")

    dest = os.path.join(out_root, name)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.move(fixture, dest)
    shutil.rmtree(tmp, ignore_errors=True)

    files = sorted(os.listdir(dest))
    nbytes = sum(os.path.getsize(os.path.join(dest, f)) for f in files)
    greedy = [int(t) for t in res["greedy"][1]]
    print("    logits [%d, %d]: max |logit| %.6g (softcap %g), argmax of last row %d, fp32 vs f64 %s"
          % (logits.shape[0], logits.shape[1], maxabs, spec["softcap"], int(np.argmax(logits[-1])),
             "%.3g" % meta["fp32_vs_f64_max_abs"] if "fp32_vs_f64_max_abs" in meta else "n/a"))
    print("    greedy %s (%s; cache vs full %.3g)" % (greedy, meta["greedy_source"],
                                                     meta["greedy_cache_vs_full_max_abs"]))
    print("    wrote %s: %s, %.0f KiB" % (dest, ", ".join(files), nbytes / 1024))
    info.update({
        "weights_from": spec["weights_from"], "files": files, "bytes": nbytes,
        "n_tokens": int(len(tokens)), "n_greedy": len(greedy),
        "text": {"vocab_size": spec["vocab"], "hidden_size": spec["hidden"],
                 "intermediate_size": spec["inter"], "num_hidden_layers": spec["L"],
                 "num_attention_heads": spec["heads"], "num_key_value_heads": spec["kv"],
                 "head_dim": spec["hd"], "sliding_window": spec["window"],
                 "full_attention_layers": [i for i, t in enumerate(layer_types(spec["L"]))
                                           if t == "full_attention"],
                 "rope_theta": spec["theta"], "rms_norm_eps": spec["rms_eps"],
                 "post_norm_eps": spec["post_eps"], "final_logit_softcapping": spec["softcap"],
                 "output_multiplier": spec["mult"]},
        "stop_ids": EOS_IDS, "bos_id": BOS_ID,
        "logits_max_abs": maxabs, "tolerance": 1e-4 * max(1.0, maxabs),
        "argmax_last_row": int(np.argmax(logits[-1])),
        "fp32_vs_f64_max_abs": meta.get("fp32_vs_f64_max_abs"),
        "self_checks": checks, "self_check_warnings": warnings,
        "pitfall_max_abs_logit_change": sens,
    })
    return info


# ------------------------------------------------------------------------------------------------
# numpy-only self test (runs without torch)


def selftest():
    fails = []

    def check(cond):
        if not cond:
            fails.append(sys._getframe(1).f_lineno)

    check(mq.selftest())
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(7)
        a = mq.f32_to_bf16_bits(rng.standard_normal((3, 5)).astype(np.float32))
        b = rng.standard_normal((2, 2)).astype(np.float32)
        c = np.arange(4, dtype=np.uint32).reshape(1, 4)
        p = os.path.join(d, "x.safetensors")
        st_write(p, [("a", "BF16", a), ("b", "F32", b), ("c", "U32", c),
                     ("t", "I64", np.arange(3, dtype=np.int64))], {"k": "v"})
        raw = open(p, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        check(n % 8 == 0)
        back, meta = st_read(p)
        check(meta == {"k": "v"} and np.array_equal(back["a"][1], a) and back["a"][0] == "BF16")
        check(np.array_equal(back["b"][1], b) and np.array_equal(back["c"][1], c))
        check(len(raw) == 8 + n + a.nbytes + b.nbytes + c.nbytes + 24)
        try:
            st_write(p, [("a", "BF16", b)])
            check(False)
        except ValueError:
            pass
        # a synthetic HF checkpoint of the hf_a shape through the MLX conversion
        spec = resolved(SPECS[0])
        H, I, V, L = spec["hidden"], spec["inter"], spec["vocab"], spec["L"]
        q, kv = spec["heads"] * spec["hd"], spec["kv"] * spec["hd"]
        shapes = {TEXT + "embed_tokens.weight": (V, H), TEXT + "norm.weight": (H,),
                  "lm_head.weight": (V, H), "model.vision_adapter.fc1.weight": (128, 128),
                  "model.vision_adapter.fc2.weight": (128, 128),
                  "model.vision_projection.weight": (H, 128),
                  "model.vision_tower.ln_pre.weight": (32,)}
        for i in range(L):
            pre = "%slayers.%d." % (TEXT, i)
            for s in CENTRED_NORMS:
                shapes[pre + s + ".weight"] = (H,)
            for s, shp in (("self_attn.q_proj", (q, H)), ("self_attn.k_proj", (kv, H)),
                           ("self_attn.v_proj", (kv, H)), ("self_attn.gate_proj", (q, H)),
                           ("self_attn.o_proj", (H, q)), ("mlp.gate_proj", (I, H)),
                           ("mlp.up_proj", (I, H)), ("mlp.down_proj", (H, I))):
                shapes[pre + s + ".weight"] = shp
        w = {n: gen_weight(spec, 1, n, s) for n, s in shapes.items()}
        hf_t = {n: ("BF16", mq.f32_to_bf16_bits(v)) for n, v in w.items()}
        check(check_hf_layout(hf_t, spec)[0] == 3 + 12 * L)
        quant = {"group_size": 64, "bits": 4, "quantize_embed": False,
                 "overrides": {"language_model.model.layers.1.mlp.down_proj": {"group_size": 32, "bits": 8}}}
        tensors, deq, block, report = mlx_convert(hf_t, quant)
        names = {t[0]: t for t in tensors}
        check(names["language_model.model.embed_tokens.weight"][1] == "BF16")
        check("language_model.model.embed_tokens.scales" not in names)
        check(names["language_model.lm_head.weight"][1] == "U32")
        check(names["language_model.lm_head.weight"][2].shape == (V, H // 8))
        check(names["language_model.lm_head.scales"][2].shape == (V, H // 64))
        dp = names["language_model.model.layers.1.mlp.down_proj.weight"][2]
        check(dp.shape == (H, I // 4) and names["language_model.model.layers.1.mlp.down_proj.scales"][2].shape == (H, I // 32))
        check(names["vision_projection.weight"][1] == "U32" and names["vision_tower.ln_pre.weight"][1] == "BF16")
        check(names["language_model.model.norm.weight"][1] == "BF16")
        check(block == {"group_size": 64, "bits": 4, "mode": "affine",
                        "language_model.model.layers.1.mlp.down_proj": {"group_size": 32, "bits": 8}})
        # dequantized values are what the stored bits say
        s = mq.bf16_bits_to_f32(names["language_model.lm_head.scales"][2])
        bb = mq.bf16_bits_to_f32(names["language_model.lm_head.biases"][2])
        qq = mq.unpack_bits(names["language_model.lm_head.weight"][2], 4, H)
        check(np.array_equal(deq["lm_head.weight"], (qq.reshape(V, H // 64, 64) * s[..., None] + bb[..., None]).reshape(V, H).astype(np.float32)))
        check(float(np.max(np.abs(deq["lm_head.weight"] - w["lm_head.weight"]))) < 0.2 * float(np.max(np.abs(w["lm_head.weight"]))))
        check(np.array_equal(deq[TEXT + "embed_tokens.weight"], w[TEXT + "embed_tokens.weight"]))
        try:
            mlx_convert(hf_t, {"group_size": 64, "bits": 4, "overrides": {"language_model.nope": {"group_size": 32, "bits": 8}}})
            check(False)
        except ValueError:
            pass
        md = os.path.join(d, "mlx")
        os.makedirs(md)
        write_mlx_dir(md, {"model_type": "muse_glimmer", "text_config": {}}, tensors, block)
        back = st_read_dir(md)
        check(set(back) == set(names))
        cfg = json.load(open(os.path.join(md, "config.json")))
        check(cfg["quantization"] == block and cfg["quantization_config"] == block)
        idx = json.load(open(os.path.join(md, "model.safetensors.index.json")))
        check(idx["metadata"]["total_size"] == sum(np.asarray(t[2]).nbytes for t in tensors))
        # sharding
        hd = os.path.join(d, "hf")
        os.makedirs(hd)
        st_write(os.path.join(hd, "model.safetensors"), [(n, dt, a) for n, (dt, a) in sorted(hf_t.items())], {"format": "pt"})
        counts = shard_in_two(hd)
        check(len(counts) == 2 and min(counts) > 0 and sum(counts) == len(hf_t))
        back = st_read_dir(hd)
        check(set(back) == set(hf_t) and all(np.array_equal(back[n][1], hf_t[n][1]) for n in hf_t))
        check(sorted(os.listdir(hd)) == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                         "model.safetensors.index.json"])
        # layer pattern from the end
        check([i for i, t in enumerate(layer_types(6)) if t == "full_attention"] == [1, 5])
        check([i for i, t in enumerate(layer_types(5)) if t == "full_attention"] == [0, 4])
        check(layer_thetas(5, 500000.0) == [0, 500000.0, 500000.0, 500000.0, 0])
        for s in SPECS:
            r = resolved(s)
            check(r["T"] > 2 * r["window"])
            check(r["hidden"] % r["heads"] == 0 and r["heads"] % r["kv"] == 0)
    print("make_vectors selftest: %s" % ("all passed" if not fails else "FAILED at lines %s" % fails))
    return not fails


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/vectors", help="output directory (default tests/vectors)")
    ap.add_argument("--only", default="", help="comma-separated fixture names (default: all)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--selftest", action="store_true", help="numpy-only checks, then exit")
    args = ap.parse_args()
    if args.selftest:
        return 0 if selftest() else 1

    specs = [resolved(s) for s in SPECS]
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {s["name"] for s in specs}
        if unknown:
            print("unknown fixtures: %s" % sorted(unknown))
            return 2
        specs = [s for s in specs if s["name"] in want]

    try:
        hf = HF()
    except Exception:
        traceback.print_exc()
        print("FATAL: torch / transformers with MuseGlimmer could not be imported")
        return 1
    torch = hf.torch
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    print("make_vectors: seed %d, torch %s, transformers %s, numpy %s, python %s"
          % (args.seed, torch.__version__, hf.transformers.__version__, np.__version__,
             sys.version.split()[0]))
    if not hf.transformers.__version__.startswith("5.17"):
        print("note: written against transformers 5.17.0; this is %s" % hf.transformers.__version__)

    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="glimmer_vectors_")
    made, failed = {}, []
    try:
        for spec in specs:
            try:
                made[spec["name"]] = make_fixture(hf, spec, args.seed, args.out, work)
            except Exception:
                traceback.print_exc()
                print("FAILED fixture %s%s" % (spec["name"], " (core)" if spec["core"] else ""))
                failed.append(spec)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    man_path = os.path.join(args.out, "manifest.json")
    manifest = {"fixtures": []}
    if os.path.exists(man_path):
        try:
            with open(man_path) as f:
                manifest = json.load(f)
        except Exception:
            pass
    entries = {e["name"]: e for e in manifest.get("fixtures", [])}
    entries.update(made)
    order = [s["name"] for s in SPECS]
    manifest = {
        "generator": "scripts/make_vectors.py", "seed": args.seed,
        "torch_version": torch.__version__, "transformers_version": hf.transformers.__version__,
        "tolerance_rule": "max |logit - ref| <= 1e-4 * max(1, max |ref|)",
        "stop_ids": EOS_IDS, "bos_id": BOS_ID,
        "fixtures": [entries[n] for n in order if n in entries and os.path.isdir(os.path.join(args.out, n))],
    }
    with open(man_path, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")

    print("\n== summary (seed %d)" % args.seed)
    for n in order:
        if n in made:
            e = made[n]
            print("  %-10s ok      %-11s max|logit| %8.4f  argmax(last) %4d  fp32-vs-f64 %-9s %6.0f KiB%s"
                  % (n, e["layout"], e["logits_max_abs"], e["argmax_last_row"],
                     "%.3g" % e["fp32_vs_f64_max_abs"] if e["fp32_vs_f64_max_abs"] is not None else "n/a",
                     e["bytes"] / 1024,
                     "  SELF-CHECK WARNINGS: %s" % e["self_check_warnings"] if e["self_check_warnings"] else ""))
    for s in failed:
        print("  %-10s FAILED%s" % (s["name"], " (core)" if s["core"] else ""))
    print("manifest: %s" % man_path)
    return 1 if any(s["core"] for s in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
