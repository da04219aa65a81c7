"""The topic classifier that files offline memories: trained by a script of the repository on
statements written for it, shipped small, in step with its training data, and right on
statements it was not trained on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from openviking.session.topics import CATEGORIES, NOT_A_MEMORY, TRAINING, WEIGHTS, digest, topic_classifier, train
from openviking.session.topics import training_data as read_training


def test_the_shipped_weights_were_trained_on_the_training_data_as_it_is() -> None:
    # After an edit of topics.txt: python -m openviking.session.topics
    with np.load(WEIGHTS, allow_pickle=False) as stored:
        model = str(stored["model"])
        assert str(stored["digest"]) == digest(model, read_training()), "topics.npz is older than topics.txt"
        assert [str(name) for name in stored["names"]] == list(CATEGORIES)
        assert stored["weights"].shape == (len(CATEGORIES), 384)
    assert WEIGHTS.stat().st_size < 64 * 1024
    assert topic_classifier("hash:v1-1024") is None  # weights of the bundled model's vectors only


def test_the_training_data_names_only_known_topics_and_none_twice() -> None:
    data = read_training()
    assert {topic for _, topic in data} == set(CATEGORIES)
    assert len({text for text, _ in data}) == len(data)
    assert min(sum(topic == name for _, topic in data) for name in CATEGORIES) >= 10


def test_a_training_file_is_read_by_its_topic_headers(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text("# a comment\n\n[home]\nThe user lives in Oslo.\n[pets]\nThe user has a dog.\n", encoding="utf-8")
    assert read_training(path) == [("The user lives in Oslo.", "home"), ("The user has a dog.", "pets")]
    assert TRAINING.name == "topics.txt"


@pytest.mark.slow
def test_training_again_gives_the_shipped_classifier_and_it_files_unseen_statements() -> None:
    from openviking.models.embedder import LocalE5Embedder

    model = LocalE5Embedder()
    data = read_training()
    vectors = model.embed_documents([text for text, _ in data])
    shipped = topic_classifier(model.identity)
    assert shipped is not None
    again = train(vectors, [topic for _, topic in data])
    same = [a.name == b.name for a, b in zip(shipped.topics(vectors), again.topics(vectors), strict=True)]
    assert sum(same) / len(same) >= 0.99
    right = [topic.name == label for topic, (_, label) in zip(shipped.topics(vectors), data, strict=True)]
    assert sum(right) / len(right) >= 0.95
    unseen = {  # the topics that fit each
        "The user has a gluten intolerance.": {"health", "food"},
        "The user's grandson is learning to swim.": {"family"},
        "The user teaches yoga at a community centre.": {"work", "education"},
        "The user keeps their photos on a NAS at home.": {"things"},
        "The user will send the slides in a minute.": {NOT_A_MEMORY},
    }
    found = shipped.topics(model.embed_documents(list(unseen)))
    assert all(topic.name in fitting for topic, fitting in zip(found, unseen.values(), strict=True)), found
