import json

import numpy as np
import pytest

from blocks.corpus.download import CorpusError
from blocks.corpus.loader import load_split, parse_episodes, read_split_file
from blocks.corpus.text import Vocabulary, tokenize


def test_tokenize_lowercases_and_drops_punctuation():
    assert tokenize("Move the SRI-block, just right of block 12.") == [
        "move", "the", "sri", "block", "just", "right", "of", "block", "12",
    ]  # fmt: skip
    assert tokenize("Place Toyota's block (left)") == ["place", "toyota's", "block", "left"]


def test_vocabulary_maps_unknown_words_to_unk():
    vocab = Vocabulary.build([["move", "the", "block"], ["move", "it"]])
    assert vocab.words[:3] == ["<pad>", "<unk>", "move"] and len(vocab) == 6
    assert vocab.encode(["move", "zebra"]) == [2, 1]
    assert vocab.encode([]) == [vocab.unk_id]  # punctuation only: the encoder still gets a token
    assert Vocabulary(vocab.to_list()).index == vocab.index
    assert vocab.decode([2, 0]) == ["move"]


def test_unknown_words_are_mended_into_the_known_words_they_stand_for():
    known = [["move", "block", "17", "sri", "in", "front", "parallel", "sort", "place", "the", "of"]]
    vocab = Vocabulary.build(known * 3 + [["parade"]])
    mend = vocab.mend
    assert mend("17th") == ["17"] and mend("3rd") == ["3rd"]  # an ordinal is its number, if that is known
    assert mend("sris") == ["sri"] and mend("sri's") == ["sri"]  # plural, possessive
    assert mend("infront") == ["in", "front"]  # two known words run together
    assert mend("paralell") == ["parallel"] and mend("paralel") == [
        "parallel"
    ]  # one slip, six letters or more
    assert mend("short") == ["short"]  # five letters: "sort" is one slip away, but short is a word of its own
    assert mend("block") == ["block"] and mend("zebra") == ["zebra"]
    sentence = ["move", "the", "17th", "block", "infront", "of", "sris"]
    assert vocab.decode(vocab.encode(sentence, mend_unknown=True)) == [
        "move", "the", "17", "block", "in", "front", "of", "sri",
    ]  # fmt: skip
    assert vocab.encode(sentence).count(vocab.unk_id) == 3  # the paper's reading: unknown words are UNK


def episode(frames=2, blocks=3, notes=None, decoration="digit"):
    rng = np.random.default_rng(0)
    states = [[[float(x), 0.1, float(z)] for x, z in rng.uniform(-1, 1, (blocks, 2))] for _ in range(frames)]
    notes = (
        notes if notes is not None else [{"start": 0, "finish": 1, "type": "A0", "notes": ["move it", "go"]}]
    )
    return {"states": states, "decoration": decoration, "notes": notes, "side_length": 0.1524}


def test_parse_keeps_only_a0_notes():
    notes = [
        {"start": 0, "finish": 1, "type": "A0", "notes": ["move block 1 up"]},
        {"start": 0, "finish": 1, "type": "A1", "notes": ["ignored"]},
    ]
    (examples,) = parse_episodes([episode(notes=notes)], "x.json")
    assert [x.instruction for x in examples] == ["move block 1 up"]
    assert examples[0].task.start.shape == (3, 2) and examples[0].uid == "x.json/0/0/0"


def test_truncated_json_names_the_file(tmp_path):
    path = tmp_path / "devset.json"
    path.write_text(json.dumps([episode()])[:-20])
    with pytest.raises(CorpusError, match="devset.json.*truncated or corrupt"):
        read_split_file(path)


def test_note_pointing_at_a_missing_frame_names_episode_and_note():
    bad = episode(notes=[{"start": 0, "finish": 5, "type": "A0", "notes": ["x"]}])
    with pytest.raises(CorpusError, match=r"x.json, episode 1, note 0: finish frame 5 does not exist"):
        parse_episodes([episode(), bad], "x.json")


def test_frames_with_different_block_counts_are_rejected():
    bad = episode()
    bad["states"][1] = bad["states"][1][:2]
    with pytest.raises(CorpusError, match="episode 0: frames have different block counts"):
        parse_episodes([bad], "x.json")


def test_missing_fields_and_unknown_split_are_clear():
    with pytest.raises(CorpusError, match="missing field 'states'"):
        parse_episodes([{"decoration": "logo", "notes": []}], "x.json")
    with pytest.raises(CorpusError, match="unknown split 'validation'"):
        load_split("validation")


def test_real_corpus_split_counts(corpus_root):
    counts = {s: load_split(s, corpus_root) for s in ("train", "tune", "dev")}
    assert {s: len(x) for s, x in counts.items()} == {"train": 11871, "tune": 675, "dev": 1719}
    assert sum(x.decoration == "logo" for x in counts["train"]) == 6003
    assert sum(x.decoration == "logo" for x in counts["dev"]) == 855
    assert len({(x.episode, x.start_frame) for x in counts["train"]}) == 1319
    assert len({(x.episode, x.start_frame) for x in counts["dev"]}) == 191
    fit = load_split("train", corpus_root, exclude_tune=True)
    assert len(fit) == 11196 and not {x.uid for x in fit} & {x.uid for x in counts["tune"]}
    assert [x.uid for x in load_split("fit", corpus_root)] == [x.uid for x in fit]  # the split eval.py names
    vocab = Vocabulary.build(x.tokens for x in fit)
    assert 900 < len(vocab) < 1300
