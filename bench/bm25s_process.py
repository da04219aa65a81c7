"""bm25s as a whole process: read a folder's markdown, index it and answer one question.

    python -m bench.bm25s_process FOLDER "QUESTION"    # prints {"top": [path, ...]} as JSON

What ``add-resource`` followed by ``find`` is measured against (``bench/live.py``): the same
files, English stop words and Snowball stemming, the ten best paths relative to FOLDER's parent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import bm25s
    import Stemmer

    folder, question = Path(argv[0]), argv[1]
    paths = sorted(folder.rglob("*.md"))
    texts = [path.read_text(encoding="utf-8") for path in paths]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    tokens = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
    found, _ = retriever.retrieve(tokens, k=min(10, len(paths)), show_progress=False)
    top = [str(paths[int(i)].relative_to(folder.parent)) for i in found[0]]
    sys.stdout.write(json.dumps({"top": top}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
