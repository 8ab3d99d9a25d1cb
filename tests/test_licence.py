"""The licence: MIT, a LICENSE file at the root, and
"SPDX-License-Identifier: MIT" in the first lines of every source file
(C, assembly, Ruby, Python, shell and Make files, man pages, and any file
that starts with #!).  Data (fuzz corpora, JSON, test dumps) is not
source.  The tree is walked as it is, so that a copy without .git (a
Debian root's /src) is checked too; build outputs are left out."""
import os

import pytest

from conftest import ROOT

pytestmark = pytest.mark.fast  # make test-fast

TAG = "SPDX-License-Identifier: MIT"
SKIP_DIRS = {".git", "build", "node_modules", "__pycache__", ".pytest_cache"}
SOURCE_EXT = {"c", "h", "S", "proto", "py", "rb", "sh", "1"}
SOURCE_NAMES = {"Makefile", "Dockerfile.test"}


def is_source(path):
    name = os.path.basename(path)
    if name in SOURCE_NAMES or name.rsplit(".", 1)[-1] in SOURCE_EXT and "." in name:
        return True
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def test_the_licence_is_mit():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        text = f.read()
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text


def test_every_source_file_names_its_licence():
    missing = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for name in files:
            path = os.path.join(d, name)
            if os.path.islink(path) or not is_source(path):
                continue
            with open(path, "rb") as f:
                head = f.read(400).decode("utf-8", "replace").splitlines()[:3]
            if not any(TAG in line for line in head):
                missing.append(os.path.relpath(path, ROOT))
    assert missing == [], f"{len(missing)} files without '{TAG}': {missing[:20]}"
