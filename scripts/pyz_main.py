"""kdump.pyz's __main__: kdump in one file, for hosts without pip or a package index.

scripts/build_pyz.py puts this file in the archive with BUILD filled in. Python imports pure
code from a zip but no extension module (kdump's C fast paths, cramjam, crc32c), so the
packages are unpacked once into a cache it names, then run from there:

    $KDUMP_PYZ_CACHE, else $XDG_CACHE_HOME/kdump-pyz, else ~/.cache/kdump-pyz
        <build id>/common   what every Python shares (kdump, click, rich, ...)
        <build id>/cp3XY    what this Python's own wheels hold (cramjam, crc32c, kdump's C)

Nothing is written anywhere else, nor is anything fetched; `kdump --version` names the
directory kdump runs from. Each part is unpacked into a private temporary directory beside it,
every file checked against the SHA-256 the archive lists for it (site/SHA256SUMS, written by
scripts/build_pyz.py), and renamed into place, so a run stopped half-way, or two runs at once,
leave no half-unpacked part.

The cache is code kdump runs, as root on a broker: it is used only where no one but this user
(or root) can change it (issue 39 point 3). Every directory from / to each part must belong to
this user or root and be writable by no one else (a world-writable directory with the sticky
bit, /tmp, is passed: no one else may rename what is in it), else kdump.pyz stops in one line:
a cache another user can write (a shared KDUMP_PYZ_CACHE, ``sudo -E`` with a user's HOME, a
root-owned cache inside a user's home) would be code of theirs run as root. Its name, the
build id, is no secret; its owner and modes are the guard.

Stdlib only, and no syntax newer than Python 3.6's: an old python3 must get the one-line
message, not a SyntaxError.
"""

import os
import stat
import sys

# scripts/build_pyz.py replaces these
BUILD = {"id": "unbuilt", "version": "", "pythons": []}

EXIT_BAD_INPUT = 3  # kdump's ExitCode.BAD_INPUT: not something to retry as it is


def fail(message):
    sys.stderr.write("kdump.pyz: " + message + "\n")
    sys.exit(EXIT_BAD_INPUT)


def cache_root():
    explicit = os.environ.get("KDUMP_PYZ_CACHE")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "kdump-pyz")


def glibc():
    """The C library's name and version where it is glibc ("glibc 2.36"), else None (musl)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        return None


def check_host(python):
    """The archive's binary packages are CPython's, for each Python it names, on x86-64 glibc
    Linux (manylinux_2_17): anywhere else they would fail half-way through a run."""
    if python not in BUILD["pythons"]:
        pythons = ", ".join(f"{v[2]}.{v[3:]}" for v in BUILD["pythons"])
        this = f"{sys.implementation.name} {sys.version.split()[0]}"
        fail(
            f"this file carries kdump for CPython {pythons}, and this is {this}: run it with "
            "one of those, or install kdump with pip (pip install kafka-kdump)"
        )
    machine, libc = os.uname().machine, glibc()
    if sys.platform != "linux" or machine != "x86_64" or not (libc or "").startswith("glibc"):
        this = f"{sys.platform} {machine} {libc or 'without glibc'}"
        fail(
            "this file carries kdump's binary packages for x86-64 Linux with glibc, and this "
            f"is {this}: install kdump with pip (pip install kafka-kdump)"
        )


def untrusted(path):
    """Why code in the directory ``path`` may not be run (another user can change it), or
    None: each directory from / to it (symbolic links resolved) must be this user's or root's,
    writable by no one else, but for a sticky one (/tmp) on the way."""
    uid = os.geteuid()
    real = os.path.realpath(path)
    current = os.sep
    names = [name for name in real.split(os.sep) if name]
    for i in range(len(names) + 1):
        if i:
            current = os.path.join(current, names[i - 1])
        status = os.lstat(current)
        if status.st_uid not in (uid, 0):
            return f"{current} belongs to uid {status.st_uid}"
        loose = status.st_mode & 0o022
        if loose and not (status.st_mode & stat.S_ISVTX and i < len(names)):
            mode = stat.S_IMODE(status.st_mode)
            return f"{current} is writable by others than its owner (mode {mode:04o})"
    return None


def unpack(archive, member, target):
    """archive's ``member/`` directory as ``target``, renamed into place once complete, each
    file checked against the archive's SHA-256 list."""
    import hashlib  # only on a first run: a cached start needs none of these
    import shutil
    import tempfile
    import zipfile

    parent = os.path.dirname(target)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".unpacking-", dir=parent)  # mode 0700
    try:
        with zipfile.ZipFile(archive) as z:
            sums = dict(
                reversed(line.split("  ", 1))
                for line in z.read("site/SHA256SUMS").decode().splitlines()
            )
            for info in z.infolist():
                if info.filename.startswith(member + "/") and not info.is_dir():
                    data = z.read(info)
                    if hashlib.sha256(data).hexdigest() != sums.get(info.filename):
                        raise OSError(f"{info.filename} is not the file this build lists")
                    z.extract(info, staging)
        try:
            os.rename(os.path.join(staging, member), target)
        except OSError:
            if not os.path.isdir(target):  # else another run unpacked it first: use theirs
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def oldest_python():
    """The oldest Python this file carries kdump for, as (3, minor): the build names them
    ("cp310"...); one made without a 3.10 starts at 3.11."""
    return min((3, int(tag[3:])) for tag in BUILD["pythons"]) if BUILD["pythons"] else (3, 10)


def main():
    oldest = oldest_python()
    if sys.version_info < oldest:
        needs = f"{oldest[0]}.{oldest[1]}"
        fail(f"this build needs Python {needs} or newer; this is Python {sys.version.split()[0]}")
    python = "cp{}{}".format(*sys.version_info[:2]) if sys.implementation.name == "cpython" else "?"
    check_host(python)
    archive = os.path.abspath(sys.argv[0])
    home = os.path.join(cache_root(), BUILD["id"])
    parts = [os.path.join(home, "common"), os.path.join(home, python)]
    for part in parts:
        if not os.path.isdir(part):
            try:
                unpack(archive, "site/" + os.path.basename(part), part)
            except OSError as e:
                fail(
                    f"cannot unpack into {home}: {e.strerror or e}; set KDUMP_PYZ_CACHE to a "
                    "directory this user may write"
                )
            except Exception as e:  # a damaged or truncated copy of the file (BadZipFile)
                fail(f"cannot read {archive}: {e}; copy it again")
        why = untrusted(part)
        if why is not None:
            fail(
                f"not running the code in {part}: {why}, so another user could change it; "
                "remove it, or set KDUMP_PYZ_CACHE to a directory of this user's that no one "
                "else may write"
            )
    # first on the path: the host's own site-packages (an older click, say) must not win
    sys.path[0:1] = parts
    from kdump.cli import main as kdump

    kdump()


if __name__ == "__main__":
    main()
