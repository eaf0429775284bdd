"""The one rule for names every platform can hold (memsync/memory/names.py), as a pure function
checked by Hypothesis, and against a real case-insensitive file system where there is one."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.memory.names import collisions, fold, is_nfc, local_key, nfc

# letters whose case or Unicode form file systems fold: accented letters in both forms, the
# German sharp s, the Kelvin sign (folds to k), dotted capital I, Greek final sigma
TRICKY = "aAeEéÉe\u0301E\u0301ßSsKk\u212aİiıσςΣ_-"
stems = st.text(alphabet=TRICKY, min_size=1, max_size=6)
names = stems.map(lambda s: f"user_{s}.md")


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


# --- the pure rule ----------------------------------------------------------------------


def test_examples_from_the_issue():
    assert collisions(["user_pat.md"], ["User_Pat.md"]) == {
        "user_pat.md": "its name differs from User_Pat.md only by letter case or Unicode "
        "form, and macOS and Windows keep such names as one file; rename it, or merge it "
        "into User_Pat.md"
    }
    cafe = unicodedata.normalize("NFC", "user_café.md")
    refused = collisions([nfd(cafe)], [cafe])
    assert list(refused) == [nfd(cafe)] and cafe in refused[nfd(cafe)]
    assert collisions(["user_pat.md", "user_pam.md"], ["User_Pat.md", "user_x.md"]).keys() == {
        "user_pat.md"
    }
    [(name, reason)] = collisions([nfd(cafe)], []).items()
    assert name == nfd(cafe) and "decomposed (Unicode NFD" in reason


@settings(max_examples=300, deadline=None)
@given(st.sets(names, max_size=6), st.sets(names, max_size=6), st.randoms())
def test_what_stays_can_live_on_any_file_system(new, known, rnd):
    refused = collisions(new, known)
    new_only = new - known
    # only new names are refused, and each refusal names the other file in one sentence
    assert set(refused) <= new_only
    for name, why in refused.items():
        assert "." not in why.rstrip(".").split("; ")[0][-1:] and "\n" not in why
        others = [o for o in (known | new) - {name} if fold(o) == fold(name)]
        assert any(o in why for o in others) or (not is_nfc(name) and nfc(name) in why)
    # every new name kept is NFC and folds like no other kept name (known ones may collide
    # among themselves: they are on the remote already, and are not this device's to refuse)
    kept_new = new_only - set(refused)
    kept = kept_new | known
    for name in kept_new:
        assert is_nfc(name)
        assert [o for o in kept if fold(o) == fold(name)] == [name]
    # a new name that folds like no other and is NFC is never refused
    for name in new_only:
        alone = all(fold(o) != fold(name) for o in (known | new) - {name})
        if alone and is_nfc(name):
            assert name not in refused
    # the same answer whatever the order the names come in
    shuffled_new, shuffled_known = list(new), list(known)
    rnd.shuffle(shuffled_new)
    rnd.shuffle(shuffled_known)
    assert collisions(shuffled_new, shuffled_known) == refused


@settings(max_examples=300, deadline=None)
@given(stems)
def test_fold_ignores_case_and_unicode_form(stem):
    name = f"user_{stem}.md"
    for variant in (name.upper(), name.lower(), nfd(name), nfc(name), nfd(name.upper())):
        assert fold(variant) == fold(name)
        assert fold(variant.casefold()) == fold(name)  # APFS's rule


# --- a real case-insensitive file system -----------------------------------------------


def _case_insensitive(folder: Path) -> bool:
    probe = folder / "memsync_Case_Probe"
    probe.write_text("x")
    try:
        return (folder / "memsync_case_probe").exists()
    finally:
        probe.unlink()


@contextlib.contextmanager
def _fat_image_mounted(tmp_path: Path, reasons: list[str]):
    """A small FAT image mounted through FUSE (`fusefat`, which needs no kernel FAT driver and
    no mount privilege beyond /dev/fuse): FAT keeps names case-insensitively, as Windows and
    macOS do by default. Yields None, with the reason appended, where it cannot be had."""
    fusefat, mkfs = shutil.which("fusefat"), shutil.which("mkfs.fat") or shutil.which("mkfs.vfat")
    unmount = shutil.which("fusermount") or shutil.which("fusermount3") or shutil.which("umount")
    if not (fusefat and mkfs and unmount and os.path.exists("/dev/fuse")):
        reasons.append("no fusefat, mkfs.fat or /dev/fuse for a FAT image")
        yield None
        return
    image, mountpoint = tmp_path / "fat.img", tmp_path / "fat"
    mountpoint.mkdir()
    with open(image, "wb") as f:
        f.truncate(16 * 1024 * 1024)
    made = subprocess.run([mkfs, str(image)], capture_output=True, text=True)
    mounted = made.returncode == 0 and subprocess.run(
        [fusefat, "-o", "rw+", str(image), str(mountpoint)], capture_output=True, timeout=30
    ).returncode == 0
    if not (mounted and os.path.ismount(mountpoint)):
        reasons.append("fusefat could not mount a FAT image")
        yield None
        return
    try:
        yield mountpoint
    finally:
        flags = ["-u"] if "fusermount" in unmount else []
        subprocess.run([unmount, *flags, str(mountpoint)], capture_output=True, check=False)


@contextlib.contextmanager
def case_insensitive_dir(tmp_path: Path):
    """A case-insensitive folder, or pytest.skip with why there is none. Tried in order:
    MEMSYNC_TEST_CASEFOLD_DIR; the temp dir itself (macOS, Windows); an ext4 folder with the
    casefold attribute (`chattr +F`); a small tmpfs mounted with `casefold` (root only); a FAT
    image mounted through FUSE."""
    reasons = []
    given_dir = os.environ.get("MEMSYNC_TEST_CASEFOLD_DIR")
    if given_dir:
        folder = Path(tempfile.mkdtemp(dir=given_dir))
        try:
            assert _case_insensitive(folder), f"{given_dir} is not case-insensitive"
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    if _case_insensitive(tmp_path):
        yield tmp_path
        return
    reasons.append("the temp dir is case-sensitive")
    folder = tmp_path / "casefold"
    folder.mkdir()
    chattr = shutil.which("chattr")
    if chattr:
        proc = subprocess.run([chattr, "+F", str(folder)], capture_output=True, text=True)
        if proc.returncode == 0 and _case_insensitive(folder):
            yield folder
            return
        reasons.append("chattr +F refused (an ext4 without the casefold feature)")
    else:
        reasons.append("no chattr")
    mount = shutil.which("mount")
    if mount and sys.platform.startswith("linux") and os.geteuid() == 0:
        proc = subprocess.run(
            [mount, "-t", "tmpfs", "-o", "size=4m,casefold", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if proc.returncode == 0:
            try:
                yield folder
            finally:
                subprocess.run(["umount", str(folder)], check=False)
            return
        reasons.append("a tmpfs with casefold refused (a kernel without CONFIG_UNICODE)")
    else:
        reasons.append("cannot mount here (not Linux, or not root)")
    with _fat_image_mounted(tmp_path, reasons) as fat:
        if fat is not None:
            yield fat
            return
    pytest.skip("no case-insensitive file system on this machine: " + "; ".join(reasons))


PAIRS = [
    ("User_Pat.md", "user_pat.md"),
    (unicodedata.normalize("NFC", "user_café.md"), nfd("user_café.md")),
    ("user_CAFÉ.md", "user_café.md"),
    ("user_kelvin.md", "user_\u212aelvin.md"),
    ("user_straße.md", "user_STRASSE.md"),
    ("user_ab.md", "user_ac.md"),
    ("user_ı.md", "user_I.md"),
    ("user_σ.md", "user_ς.md"),
]
# pairs the rule folds together that some case-insensitive file systems keep apart
WIDER = {
    ("user_straße.md", "user_STRASSE.md"),
    ("user_kelvin.md", "user_\u212aelvin.md"),
    ("user_σ.md", "user_ς.md"),
    ("user_ı.md", "user_I.md"),
    (unicodedata.normalize("NFC", "user_café.md"), nfd("user_café.md")),
}


def test_every_pair_the_file_system_merges_is_refused(tmp_path):
    """Soundness against the real thing: if the file system keeps the two names as one file,
    the rule refuses the second. (The rule may refuse more than one file system merges: it
    folds for the widest of APFS and NTFS.)"""
    with case_insensitive_dir(tmp_path) as folder:
        merged_pairs = 0
        for first, second in PAIRS:
            try:
                (folder / first).write_text("first")
            except OSError:  # FAT through fusefat holds no names outside ASCII
                continue
            try:
                merged = (folder / second).exists() and (folder / second).read_text() == "first"
            finally:
                for name in os.listdir(folder):
                    (folder / name).unlink()
            if merged:
                merged_pairs += 1
                assert second in collisions([second], [first]), (first, second)
            else:
                assert fold(first) != fold(second) or (first, second) in WIDER, (first, second)
        assert merged_pairs >= 1  # it is case-insensitive: User_Pat.md at least


def test_a_decomposed_listing_is_keyed_nfc_where_the_file_system_merges_forms(tmp_path):
    name = nfd("user_café.md")
    (tmp_path / name).write_text("x")
    merges = (tmp_path / nfc(name)).exists()
    assert local_key(str(tmp_path), name) == (nfc(name) if merges else name)
    assert local_key(str(tmp_path), "User_Pat.md") == "User_Pat.md"
