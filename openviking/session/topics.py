"""What a statement about the user is about, and so its category: a small classifier over the
bundled model's vectors.

A statement's topic (home, work, health, family, things, food, plans...) is decided by a
softmax regression over its multilingual-e5-small vector, trained on ``topics.txt``: a few
hundred statements about a user written by hand, each under its topic. The category is the
topic's, in upstream's names: ``profile`` (who the user is: home, work, studies, health,
origin), ``preferences`` (food, tastes, hobbies and habits, how they want things done),
``entities`` (their people, pets, things and tools), ``events`` (plans, and what happened) and
``cases`` (a problem and how it was solved). ``chatter`` (a request, a mood, a reaction: what
is true only in the conversation) is no memory. Measured on statements told in passing that it
was not trained on (bench/README.md, "Facts told in passing").

``python -m openviking.session.topics`` trains it (full-batch gradient descent from zero: the
same data and model give the same weights) into ``topics.npz`` beside this module, with a
digest of the training data; the classifier reads only that file at run time.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CATEGORIES", "NOT_A_MEMORY", "TopicClassifier", "topic_classifier"]

WEIGHTS = Path(__file__).with_name("topics.npz")
TRAINING = Path(__file__).with_name("topics.txt")
NOT_A_MEMORY = "chatter"
# Each topic's category (upstream's); chatter has none.
CATEGORIES = {
    "home": "profile", "work": "profile", "education": "profile", "health": "profile", "identity": "profile",
    "family": "entities", "people": "entities", "pets": "entities", "things": "entities",
    "food": "preferences", "tastes": "preferences", "hobbies": "preferences", "style": "preferences",
    "plans": "events", "happenings": "events", "cases": "cases", NOT_A_MEMORY: "",
}  # fmt: skip
SCALE = 20.0  # cosines times this are the logits' inputs: a softmax over [-1, 1] is too flat to learn
STEPS, RATE, L2 = 3000, 2.0, 1e-3


@dataclass(frozen=True, slots=True)
class Topic:
    """A statement's topic, and its category."""

    name: str
    category: str


class TopicClassifier:
    """Topics from vectors of the bundled model: the largest of ``SCALE * v . W + b``."""

    def __init__(self, names: Sequence[str], weights: np.ndarray, bias: np.ndarray) -> None:
        self.names = list(names)
        self.weights = weights
        self.bias = bias

    def topics(self, vectors: np.ndarray) -> list[Topic]:
        """The topic of each statement, given its vector."""
        import numpy as np

        logits = SCALE * (np.asarray(vectors, dtype=np.float32) @ self.weights.T) + self.bias
        return [Topic(self.names[int(i)], CATEGORIES[self.names[int(i)]]) for i in logits.argmax(axis=1)]


def training_data(path: Path = TRAINING) -> list[tuple[str, str]]:
    """``(statement, topic)`` of the training file: ``[topic]`` lines head each topic's statements."""
    out: list[tuple[str, str]] = []
    topic = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            topic = line[1:-1]
        elif topic:
            out.append((line, topic))
    return out


def digest(model_identity: str, data: Sequence[tuple[str, str]]) -> str:
    """What the weights were trained from: the model and the training data."""
    lines = [model_identity, *(f"{topic}\t{text}" for text, topic in data)]
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def train(vectors: np.ndarray, labels: Sequence[str]) -> TopicClassifier:
    """A classifier fitted to ``vectors`` (the bundled model's, one a statement) and their topics."""
    import numpy as np

    names = [name for name in CATEGORIES if name in set(labels)]
    x = np.asarray(vectors, dtype=np.float64)
    targets = np.eye(len(names))[[names.index(label) for label in labels]]
    weights = np.zeros((len(names), x.shape[1]))
    bias = np.zeros(len(names))
    for _ in range(STEPS):
        logits = SCALE * (x @ weights.T) + bias
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        odds /= odds.sum(axis=1, keepdims=True)
        error = (odds - targets) / len(x)
        weights -= RATE * (SCALE * error.T @ x + L2 * weights)
        bias -= RATE * error.sum(axis=0)
    return TopicClassifier(names, weights.astype(np.float32), bias.astype(np.float32))


_lock = threading.Lock()
_loaded: dict[str, TopicClassifier | None] = {}


def topic_classifier(model_identity: str) -> TopicClassifier | None:
    """The trained classifier for vectors of ``model_identity``; None when ``topics.npz`` was
    trained on another model's vectors, or cannot be read."""
    import numpy as np

    with _lock:
        if model_identity not in _loaded:
            found: TopicClassifier | None = None
            try:
                with np.load(WEIGHTS, allow_pickle=False) as stored:
                    if str(stored["model"]) == model_identity:
                        found = TopicClassifier([str(n) for n in stored["names"]], stored["weights"], stored["bias"])
            except (OSError, KeyError, ValueError):
                found = None
            _loaded[model_identity] = found
        return _loaded[model_identity]


def _build(path: Path = WEIGHTS) -> None:
    """Train on ``topics.txt`` with the bundled model and write the weights to ``path``."""
    import numpy as np

    from openviking.models.embedder import LocalE5Embedder

    model = LocalE5Embedder()
    data = training_data()
    classifier = train(model.embed_documents([text for text, _ in data]), [topic for _, topic in data])
    with path.open("wb") as out:
        np.savez_compressed(
            out,
            names=np.array(classifier.names),
            weights=classifier.weights,
            bias=classifier.bias,
            model=np.array(model.identity),
            digest=np.array(digest(model.identity, data)),
        )


if __name__ == "__main__":
    _build()
