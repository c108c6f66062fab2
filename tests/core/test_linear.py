"""Linear models: text features, binary and multiclass probabilities, explanations and the JSON round trip."""
from __future__ import annotations

import math

import pytest

from reconcile_app.core.linear import LinearModel, TextField, ngrams, text_tokens


def test_tokens_keep_chat_marks_and_collapse_numbers() -> None:
    assert text_tokens("Took 2 of them?? 😬 can't say") == ["took", "<num>", "of", "them", "?", "?", "😬", "can't", "say"]


def test_ngrams_add_bigrams_after_unigrams() -> None:
    assert ngrams(["a", "b", "c"], 2) == ["a", "b", "c", "a b", "b c"]


def test_text_field_fits_idf_only_for_terms_in_enough_documents() -> None:
    field = TextField.fit("t", ["red pill", "red cup", "blue sky"], ngram_max=1, min_df=2)
    assert set(field.idf) == {"red"}
    features = field.features("red red ball")
    assert list(features) == ["t:red"]
    assert features["t:red"] == pytest.approx(1.0)  # l2-normalised single term


def _binary() -> LinearModel:
    field = TextField("t", {"stopped": 1.0, "fine": 1.0}, ngram_max=1)
    return LinearModel("toy", "1", ["no", "yes"], {"yes": {"t:stopped": 3.0, "t:fine": -3.0, "f:reading": 1.0}},
                       {"yes": -1.0}, [field], threshold=0.5)


def test_binary_probability_follows_the_weights_and_explains_itself() -> None:
    model = _binary()
    up = model.featurize({"t": "I stopped it"}, {"reading": 1.0})
    down = model.featurize({"t": "all fine"}, {})
    assert model.positive(up) == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert model.positive(down) < 0.05
    assert model.predict(up) == "yes" and model.predict(down) == "no"
    assert [name for name, _ in model.explain(up)] == ["t:stopped", "f:reading"]


def test_multiclass_softmax_picks_the_heaviest_class() -> None:
    model = LinearModel("cat", "1", ["a", "b", "c"], {"a": {"f:x": 2.0}, "b": {"f:y": 2.0}, "c": {}}, {"a": 0.0, "b": 0.0, "c": 0.0})
    probs = model.proba(model.featurize({}, {"y": 1.0}))
    assert max(probs, key=probs.get) == "b" and sum(probs.values()) == pytest.approx(1.0)


def test_json_round_trip_gives_the_same_scores_and_fingerprint() -> None:
    model = _binary()
    again = LinearModel.from_json(model.to_json())
    features = model.featurize({"t": "stopped"}, {"reading": 1.0})
    assert again.positive(features) == pytest.approx(model.positive(features))
    assert again.fingerprint() == model.fingerprint()


def test_a_foreign_json_is_refused() -> None:
    with pytest.raises(ValueError):
        LinearModel.from_json('{"format": "something-else"}')


def test_the_fingerprint_is_computed_once_and_follows_the_threshold(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    model = LinearModel("m", "1", ["no", "yes"], {"yes": {"f:x": 1.0}}, {"yes": 0.0}, threshold=0.5)
    first = model.fingerprint()
    monkeypatch.setattr(LinearModel, "to_json", lambda self: pytest.fail("serialised again"))
    assert model.fingerprint() == first  # read per memory by the engines' version: never serialised twice
    monkeypatch.undo()
    model.threshold = 0.9
    assert model.fingerprint() != first


def _load_fresh(path):  # type: ignore[no-untyped-def]
    from reconcile_app.core.linear import load_model

    load_model.cache_clear()  # a new process, as far as the loader knows
    try:
        return load_model(str(path))
    finally:
        load_model.cache_clear()


def test_a_loaded_models_fingerprint_is_stored_once_and_read_by_later_processes(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECONCILE_LEXICON_CACHE", str(tmp_path / "cache"))
    stored = tmp_path / "toy.json"
    stored.write_text(_binary().to_json(), encoding="utf-8")
    expected = LinearModel.from_json(stored.read_text(encoding="utf-8")).fingerprint()
    first = _load_fresh(stored)
    (cached,) = (tmp_path / "cache").glob("linear-*.fingerprint")
    assert cached.read_text(encoding="ascii").strip() == expected == first.fingerprint()
    monkeypatch.setattr(LinearModel, "to_json", lambda self: pytest.fail("serialised again"))
    assert _load_fresh(stored).fingerprint() == expected


def test_another_models_text_or_an_unreadable_entry_is_never_taken_from_the_cache(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECONCILE_LEXICON_CACHE", str(tmp_path / "cache"))
    stored = tmp_path / "toy.json"
    stored.write_text(_binary().to_json(), encoding="utf-8")
    toy = _load_fresh(stored).fingerprint()
    other = _binary()
    other.intercepts["yes"] = 2.0  # same name and version, other weights
    stored.write_text(other.to_json(), encoding="utf-8")
    assert _load_fresh(stored).fingerprint() == other.fingerprint() != toy
    for entry in (tmp_path / "cache").glob("linear-*.fingerprint"):
        entry.write_text("not a fingerprint\n", encoding="ascii")
    assert _load_fresh(stored).fingerprint() == other.fingerprint()
