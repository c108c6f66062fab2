"""Linear models over named features, trained offline and shipped as versioned JSON: pure-Python inference with explanations.

Why a home-made format rather than a pickled scikit-learn estimator: the engines must load offline, deterministically and
fast in every worker, and every decision must be explainable. A model here is a dictionary of named weights (text
n-grams under a field prefix, plus dense features computed by the rules) and an intercept; the text features are
computed by the same pure functions at training time and at run time, so the two can never drift apart. scikit-learn
is used only to fit the weights (evaluation/training.py).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMAT = "reconcile-linear/1"

# Words (with an inner apostrophe), digits, question and exclamation marks and emoji: chat punctuation and emoji
# carry meaning in coaching text ("??", "💀"), everything else is separator.
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:\.\d+)?|[?!]|[\U0001F300-\U0001FAFF\u2600-\u27BF]")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def text_tokens(text: str) -> list[str]:
    """Lowercased tokens; numbers collapse to a shape token (the value is the rules' business, the presence is a cue)."""
    low = (text or "").lower().replace("\u2019", "'").replace("\u2018", "'")
    return ["<num>" if _NUMBER.match(t) else t for t in _TOKEN.findall(low)]


def ngrams(tokens: Sequence[str], n_max: int) -> list[str]:
    out = list(tokens)
    for n in range(2, n_max + 1):
        out += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return out


@dataclass
class TextField:
    """TF-IDF of one text field (sublinear term frequency, smoothed idf, l2 norm), keys prefixed by the field name."""

    prefix: str
    idf: dict[str, float]
    ngram_max: int = 2
    weight: float = 1.0

    def features(self, text: str) -> dict[str, float]:
        counts = Counter(g for g in ngrams(text_tokens(text), self.ngram_max) if g in self.idf)
        values = {g: (1.0 + math.log(c)) * self.idf[g] for g, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
        return {f"{self.prefix}:{g}": self.weight * v / norm for g, v in values.items()}

    @classmethod
    def fit(cls, prefix: str, texts: Iterable[str], *, ngram_max: int = 2, min_df: int = 2, weight: float = 1.0) -> TextField:
        docs = [set(ngrams(text_tokens(t), ngram_max)) for t in texts]
        df: Counter[str] = Counter(g for d in docs for g in d)
        n = len(docs)
        idf = {g: math.log((1 + n) / (1 + c)) + 1.0 for g, c in sorted(df.items()) if c >= min_df}
        return cls(prefix=prefix, idf=idf, ngram_max=ngram_max, weight=weight)


@dataclass
class LinearModel:
    """Binary (one weight vector) or multiclass (one per class, softmax) logistic model over named features."""

    name: str
    version: str
    classes: list[str]  # binary: ["no", "yes"]; multiclass: the labels
    weights: dict[str, dict[str, float]]  # class -> feature -> weight (binary: only the positive class)
    intercepts: dict[str, float]
    fields: list[TextField] = field(default_factory=list)
    threshold: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def binary(self) -> bool:
        return len(self.classes) == 2

    def featurize(self, texts: Mapping[str, str], dense: Mapping[str, float] | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        for f in self.fields:
            out.update(f.features(texts.get(f.prefix, "")))
        for key, value in (dense or {}).items():
            if value:
                out[f"f:{key}"] = float(value)
        return out

    def _logit(self, cls: str, features: Mapping[str, float]) -> float:
        w = self.weights.get(cls, {})
        return self.intercepts.get(cls, 0.0) + sum(w.get(k, 0.0) * v for k, v in features.items())

    def proba(self, features: Mapping[str, float]) -> dict[str, float]:
        if self.binary:
            p = _sigmoid(self._logit(self.classes[1], features))
            return {self.classes[0]: 1.0 - p, self.classes[1]: p}
        logits = {c: self._logit(c, features) for c in self.classes}
        top = max(logits.values())
        exps = {c: math.exp(v - top) for c, v in logits.items()}
        total = sum(exps.values())
        return {c: e / total for c, e in exps.items()}

    def positive(self, features: Mapping[str, float]) -> float:
        """Binary models: the probability of the positive class."""
        return self.proba(features)[self.classes[1]]

    def predict(self, features: Mapping[str, float]) -> str:
        probs = self.proba(features)
        if self.binary:
            return self.classes[1] if probs[self.classes[1]] >= self.threshold else self.classes[0]
        return max(self.classes, key=lambda c: (probs[c], -self.classes.index(c)))

    def explain(self, features: Mapping[str, float], cls: str | None = None, top: int = 5) -> list[tuple[str, float]]:
        """The features that pushed hardest towards `cls` (default: the positive or predicted class)."""
        cls = cls or (self.classes[1] if self.binary else self.predict(features))
        w = self.weights.get(cls, {})
        contrib = [(k, w.get(k, 0.0) * v) for k, v in features.items() if w.get(k)]
        return sorted(contrib, key=lambda kv: (-kv[1], kv[0]))[:top]

    # ---- storage --------------------------------------------------------------------------

    def to_json(self) -> str:
        data = {
            "format": FORMAT, "name": self.name, "version": self.version, "classes": self.classes,
            "threshold": self.threshold, "intercepts": self.intercepts,
            "weights": {c: {k: round(v, 6) for k, v in sorted(w.items()) if abs(v) >= 1e-6} for c, w in self.weights.items()},
            "fields": [{"prefix": f.prefix, "ngram_max": f.ngram_max, "weight": f.weight,
                        "idf": {k: round(v, 6) for k, v in sorted(f.idf.items())}} for f in self.fields],
            "meta": self.meta,
        }
        return json.dumps(data, indent=0, sort_keys=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LinearModel:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} model")
        # Only the idf terms the weights use matter at run time; dropping the rest keeps loading fast.
        used = {k for w in data["weights"].values() for k in w}
        fields = [TextField(f["prefix"], {g: v for g, v in f["idf"].items() if f"{f['prefix']}:{g}" in used}, int(f["ngram_max"]),
                            float(f.get("weight", 1.0)))
                  for f in data.get("fields", [])]
        return cls(name=data["name"], version=data["version"], classes=list(data["classes"]),
                   weights={c: dict(w) for c, w in data["weights"].items()}, intercepts=dict(data["intercepts"]),
                   fields=fields, threshold=float(data.get("threshold", 0.5)), meta=dict(data.get("meta", {})))

    def fingerprint(self) -> str:
        """A short hash of the stored model. Engines put it in their version, which is read per memory: serialising a
        model of ~10^5 weights each time cost 0.3 s a call, so it is computed once per threshold (weights are never
        changed after fitting; the threshold is set after it)."""
        cached = self.__dict__.get("_fingerprint")
        if cached is None or cached[0] != self.threshold:
            cached = (self.threshold, hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()[:12])
            self.__dict__["_fingerprint"] = cached
        return cached[1]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@lru_cache(maxsize=16)
def load_model(path: str) -> LinearModel:
    """Loaded once per process (workers share nothing else), with its fingerprint from the on-disk cache."""
    text = Path(path).read_text(encoding="utf-8")
    model = LinearModel.from_json(text)
    _fingerprint_seed(model, text)
    return model


def _fingerprint_path(text: str) -> Path:
    """One small file per stored model, keyed by its text, this module's source (how a model is serialised) and the
    Python version; in the folder of the lexicon's cache (same setting)."""
    digest = hashlib.sha256(text.encode("utf-8"))
    digest.update(Path(__file__).read_bytes())
    digest.update(sys.version.encode())
    root = os.environ.get("RECONCILE_LEXICON_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "reconcile")
    return Path(root) / f"linear-{digest.hexdigest()[:16]}.fingerprint"


def _fingerprint_seed(model: LinearModel, text: str) -> None:
    """The fingerprint serialises the whole model (0.05 CPU-s for each shipped model, in every process that loads the
    engines, before any work): it is a function of the file's text, so the first process stores it and the others
    read it. Any failure to read or write the cache only means computing it as before."""
    path: Path | None = None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        path = _fingerprint_path(text)
        stored = path.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{12}", stored):
            model.__dict__["_fingerprint"] = (model.threshold, stored)
            return
    fingerprint = model.fingerprint()
    if path is None:
        return
    tmp_name = ""
    try:  # a unique temporary file renamed into place: a concurrent reader sees nothing or the whole line
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(fingerprint + "\n")
        os.replace(tmp_name, path)
        tmp_name = ""
    except OSError:
        pass
    finally:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
