"""`gpuconform doctor`: what the fastpath (GPU-direct file I/O) needs, and
what this machine has.

    gpuconform doctor [--scratch-dir DIR] [--fix] [--json]

Three sections: the scratch location (shared by cufile_io and hipfile_io,
lib/fastpath.h), NVIDIA cuFile, and AMD (hipFile, hipAmdFile*,
hsa_amd_ais_file_*). Each item is one line "STATUS  ITEM: what was found
[-> fix]", STATUS being:

    ok       the item is there;
    MISSING  a present stack needs it and this machine lacks it (with the fix);
    note     a fact: nothing here is required of it, or it cannot be told
             without calling into a GPU library.

A stack is present when its kernel driver is (/proc/driver/nvidia/version;
/dev/kfd); the scratch location is needed when any stack is. Missing items of
an absent stack are notes: CI and laptops get a true account and exit 0.

The scratch directory follows lib/io.h's rule (gc_io_scratch_dir):
--scratch-dir, else $GPUCONFORM_SCRATCH_DIR when set and not empty, else
/var/tmp. The udev database directory follows lib/fastpath.h's:
$GPUCONFORM_UDEV_DATA_DIR when set and not empty, else /run/udev/data.

Nothing changes the system, except a probe file in the scratch directory
(created, opened with O_DIRECT, 4 KiB written and read back, removed) and,
with --fix, the udev record. Libraries are opened as the test binaries open
them: dlopen by soname through the loader path; one found only under
/usr/local/cuda or /opt/rocm is MISSING, with the loader fix. The one call into
a vendor library is cuFileGetVersion; HIP and HSA symbols are looked up
(dlsym), never called.

--fix writes the missing udev record of the scratch device,
"E:ID_FS_USAGE=filesystem" and "E:ID_FS_TYPE=<mountinfo's type>" lines, in
the format of udev's database: a new file, or the missing keys appended to
an existing record (never overwritten); it prints what it wrote and where.
Root only while the record goes to the real /run/udev/data; with
$GPUCONFORM_UDEV_DATA_DIR set (the seam lib/fastpath.h's unit tests use too)
that directory's own permissions decide, so the runner's tests exercise --fix
without root.

Exit status: 0 when every item the present stacks need is ok (nothing is
needed when no stack is present), 1 when a needed item is MISSING or --fix
could not write, 2 on bad usage (--fix by a non-root user): DoctorError, one
line.
"""

from __future__ import annotations

import ctypes
import glob
import json
import mmap
import os
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

__all__ = [
    "DoctorError",
    "Mount",
    "UdevRecord",
    "Item",
    "Section",
    "SysPaths",
    "parse_mountinfo",
    "mount_for",
    "strip_json_comments",
    "parse_udev_record",
    "decode_cufile_version",
    "item_status",
    "verdict",
    "udev_fix_text",
    "run_doctor",
]

SCRATCH_ENV = "GPUCONFORM_SCRATCH_DIR"  # lib/io.h GC_SCRATCH_ENV
SCRATCH_DEFAULT = "/var/tmp"  # lib/io.h GC_SCRATCH_DEFAULT
UDEV_ENV = "GPUCONFORM_UDEV_DATA_DIR"  # lib/fastpath.h GC_FP_UDEV_DATA_ENV
UDEV_DEFAULT = "/run/udev/data"  # lib/fastpath.h GC_FP_UDEV_DATA_DEFAULT
CUFILE_JSON_ENV = "CUFILE_ENV_PATH_JSON"  # GDS configuration guide
PROBE_SIZE = 4096  # O_DIRECT probe: one page, aligned (mmap) at offset 0

OK, MISSING, NOTE = "ok", "MISSING", "note"
SCRATCH, NVIDIA, AMD = "scratch location", "NVIDIA cuFile", "AMD hipFile / hipAmdFile*"

FIX_SCRATCH = (f"set {SCRATCH_ENV} (or --scratch-dir) to a writable directory on a disk "
               "filesystem (ext4, xfs)")
FIX_ROCM = "install ROCm 7.2 or later (hipFile; HIP and ROCr with hipAmdFile*, hsa_amd_ais_file_*)"


class DoctorError(Exception):
    """A one-line reason doctor cannot do what it was asked (exit 2)."""


# ------------------------------------------------------------ pure pieces


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo (the fields doctor uses)."""

    mount_point: str
    device: str  # "MAJ:MIN" as mountinfo gives it
    fs_type: str
    source: str


def _unescape_mountinfo(text: str) -> str:
    r"""mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134."""
    out, i = [], 0
    while i < len(text):
        octal = text[i + 1:i + 4]
        if text[i] == "\\" and len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a mountinfo text (proc(5)), in order; malformed lines skipped.

    "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the
    fourth field is MAJ:MIN, the fifth the mount point; after the "-"
    separator come the filesystem type and the source.
    """
    mounts: list[Mount] = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3:
            continue
        mounts.append(Mount(_unescape_mountinfo(fields[4]), fields[2],
                            _unescape_mountinfo(fields[sep + 1]),
                            _unescape_mountinfo(fields[sep + 2])))
    return mounts


def _covers(mount_point: str, path: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def mount_for(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding absolute path: the longest covering mount point, and
    of equal ones the last (a later mount on the same point hides the earlier)."""
    best: Mount | None = None
    for m in mounts:
        if _covers(m.mount_point, path) and (
                best is None or len(m.mount_point) >= len(best.mount_point)):
            best = m
    return best


def _skip_string(text: str, i: int) -> int:
    """The index just past the JSON string starting at text[i] == '"'."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return i


def strip_json_comments(text: str) -> str:
    """text without // line comments and /* */ block comments outside strings
    (cufile.json has them); strings, "//" inside them included, stay as they are.
    A comment's newline is kept, so json.loads' line numbers still match."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c, two = text[i], text[i:i + 2]
        if c == '"':
            end = _skip_string(text, i)
            out.append(text[i:end])
            i = end
        elif two == "//":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
        elif two == "/*":
            end = text.find("*/", i + 2)
            comment = text[i:] if end < 0 else text[i:end + 2]
            out.append("\n" * comment.count("\n"))
            i = len(text) if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class UdevRecord:
    """The keys of a udev database record (/run/udev/data/bMAJ:MIN) cuFile needs."""

    usage: str = ""  # E:ID_FS_USAGE= value, "" when absent or empty
    fs_type: str = ""  # E:ID_FS_TYPE= value, "" when absent or empty

    @property
    def complete(self) -> bool:
        return bool(self.usage) and bool(self.fs_type)


def parse_udev_record(text: str) -> UdevRecord:
    """Lines "E:KEY=VALUE"; the last of a key wins (lib/fastpath.c
    gc_fp_udev_record_parse reads it the same way)."""
    usage = fs_type = ""
    for line in text.split("\n"):
        if line.startswith("E:ID_FS_USAGE="):
            usage = line[len("E:ID_FS_USAGE="):]
        elif line.startswith("E:ID_FS_TYPE="):
            fs_type = line[len("E:ID_FS_TYPE="):]
    return UdevRecord(usage, fs_type)


def decode_cufile_version(version: int) -> str:
    """cuFileGetVersion's number: "(1000 major + 10 minor)", e.g. 1070 is 1.7."""
    major, rest = divmod(version, 1000)
    minor, units = divmod(rest, 10)
    text = f"{version} = {major}.{minor} (1000*major + 10*minor)"
    if units:
        text += f", and {units} in the units digit, which that rule does not use"
    return text


def item_status(met: bool | None, needed: bool) -> str:
    """ok when met; MISSING when not met and needed; note otherwise
    (not needed, or met is None: cannot be told)."""
    if met:
        return OK
    if met is False and needed:
        return MISSING
    return NOTE


def udev_fix_text(record: UdevRecord | None, fs_type: str, existing: str = "") -> str:
    """What --fix writes: both lines for a new record (record None); for an
    existing one the missing keys only, after a newline if its text lacks a
    final one; "" when nothing is missing."""
    lines = []
    if record is None or not record.usage:
        lines.append("E:ID_FS_USAGE=filesystem\n")
    if record is None or not record.fs_type:
        lines.append(f"E:ID_FS_TYPE={fs_type}\n")
    text = "".join(lines)
    if text and existing and not existing.endswith("\n"):
        text = "\n" + text
    return text


@dataclass
class Item:
    name: str
    status: str  # OK, MISSING, NOTE
    found: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<7}  {self.name}: {self.found}"
        return text + (f" -> {self.fix}" if self.status == MISSING and self.fix else "")


@dataclass
class Section:
    name: str
    present: bool  # a stack: its driver is there; scratch: some stack needs it
    why: str
    items: list[Item] = field(default_factory=list)

    def add(self, name: str, found: str, met: bool | None = None, *, need: bool = False,
            fix: str = "") -> None:
        """An item; need: the stack needs it (MISSING only when the section is present)."""
        self.items.append(Item(name, item_status(met, need and self.present), found,
                               fix if met is False else ""))


def verdict(sections: list[Section]) -> tuple[int, str]:
    """Exit status and one line: 1 when an item is MISSING, else 0."""
    missing = [f"{s.name}: {i.name}" for s in sections for i in s.items if i.status == MISSING]
    stacks = [s.name for s in sections if s.present and s.name != SCRATCH]
    if missing:
        return 1, f"{len(missing)} needed item(s) MISSING: {'; '.join(missing)}"
    if not stacks:
        return 0, ("no GPU stack present (no /proc/driver/nvidia/version, no /dev/kfd): "
                   "nothing is needed on this machine")
    return 0, f"every item {' and '.join(stacks)} need(s) is ok"


# ----------------------------------------------------------------- probes


@dataclass(frozen=True)
class SysPaths:
    """Where doctor looks; tests point these into a tmp dir."""

    mountinfo: str = "/proc/self/mountinfo"
    sys_dev_block: str = "/sys/dev/block"
    nvidia_version: str = "/proc/driver/nvidia/version"
    nvfs_version: str = "/proc/driver/nvidia-fs/version"
    nvfs_module: str = "/sys/module/nvidia_fs"
    cufile_json: str = "/etc/cufile.json"
    kfd: str = "/dev/kfd"
    amdgpu_module: str = "/sys/module/amdgpu"
    cuda_libs: tuple[str, ...] = ("libcuda.so.1",)
    cufile_libs: tuple[str, ...] = ("libcufile.so.0", "libcufile.so")
    cufile_dirs: tuple[str, ...] = ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib")
    hip_libs: tuple[str, ...] = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                 "libamdhip64.so.5")  # lib/hipfile's order
    hsa_libs: tuple[str, ...] = ("libhsa-runtime64.so.1",)
    hipfile_libs: tuple[str, ...] = ("libhipfile.so.0", "libhipfile.so")
    rocm_dirs: tuple[str, ...] = ("/opt/rocm/lib", "/opt/rocm-*/lib")


@dataclass
class ScratchFacts:
    dir: str
    source: str  # "--scratch-dir", "$GPUCONFORM_SCRATCH_DIR" or "default; ... unset"
    error: str | None = None  # the directory is unusable: why
    mount: Mount | None = None
    device: str | None = None  # "MAJ:MIN" of st_dev
    block_device: bool = False
    odirect: bool | None = None
    odirect_error: str | None = None
    free_bytes: int | None = None
    udev_path: str | None = None
    udev_exists: bool = False
    udev: UdevRecord | None = None
    udev_error: str | None = None


def scratch_dir(cli_dir: str | None, env: dict[str, str]) -> tuple[str, str]:
    """(directory, where it came from): lib/io.h's gc_io_scratch_dir rule, after --scratch-dir."""
    if cli_dir:
        return os.path.abspath(cli_dir), "--scratch-dir"
    if env.get(SCRATCH_ENV):
        return os.path.abspath(env[SCRATCH_ENV]), f"${SCRATCH_ENV}"
    return SCRATCH_DEFAULT, f"default; ${SCRATCH_ENV} unset"


def udev_dir(env: dict[str, str]) -> str:
    return env.get(UDEV_ENV) or UDEV_DEFAULT


def _read_text(path: str, limit: int = 1 << 20) -> str:
    with open(path, "rb") as f:
        return f.read(limit).decode("utf-8", errors="replace")


def _errno_text(e: OSError) -> str:
    return f"{e.strerror or e}" + (f" (errno {e.errno})" if e.errno else "")


def probe_odirect(directory: str) -> tuple[bool, str | None]:
    """A file created in directory, opened with O_DIRECT, 4 KiB written and read
    back through a page-aligned buffer, removed. (True, None) or (False, why).
    OSError from the creation itself propagates: the directory is unusable."""
    fd, path = tempfile.mkstemp(prefix="gpuconform-doctor-", dir=directory)
    os.close(fd)
    try:
        dfd = os.open(path, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
    except OSError as e:
        os.unlink(path)
        return False, f"open(O_DIRECT): {_errno_text(e)}"
    try:
        with mmap.mmap(-1, PROBE_SIZE) as buf:
            buf.write(b"\xa5" * PROBE_SIZE)
            if os.pwrite(dfd, buf, 0) != PROBE_SIZE or os.preadv(dfd, [buf], 0) != PROBE_SIZE:
                return False, "a 4 KiB O_DIRECT write or read was short"
        return True, None
    except OSError as e:
        return False, f"4 KiB O_DIRECT write and read: {_errno_text(e)}"
    finally:
        os.close(dfd)
        os.unlink(path)


def _probe_udev(s: ScratchFacts, udev_data: str) -> None:
    s.udev_path = os.path.join(udev_data, f"b{s.device}")
    try:
        text = _read_text(s.udev_path, 64 * 1024)  # lib/fastpath.c's cap
    except FileNotFoundError:
        return
    except OSError as e:
        s.udev_exists = True
        s.udev_error = _errno_text(e)
        return
    s.udev_exists = True
    s.udev = parse_udev_record(text)


def _probe_mount(s: ScratchFacts, paths: SysPaths) -> None:
    try:
        mounts = parse_mountinfo(_read_text(paths.mountinfo, 64 << 20))
    except OSError:
        mounts = []
    s.mount = mount_for(os.path.realpath(s.dir), mounts)


def probe_scratch(directory: str, source: str, udev_data: str,
                  paths: SysPaths = SysPaths()) -> ScratchFacts:
    s = ScratchFacts(directory, source)
    try:
        st = os.stat(directory)
    except OSError as e:
        s.error = _errno_text(e)
        return s
    if not stat.S_ISDIR(st.st_mode):
        s.error = "not a directory"
        return s
    s.device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    s.block_device = os.path.exists(os.path.join(paths.sys_dev_block, s.device))
    _probe_mount(s, paths)
    try:
        s.odirect, s.odirect_error = probe_odirect(directory)
    except OSError as e:
        s.error = f"cannot create a file there: {_errno_text(e)}"
    try:
        sv = os.statvfs(directory)
        s.free_bytes = sv.f_bavail * sv.f_frsize
    except OSError:
        pass
    _probe_udev(s, udev_data)
    return s


@dataclass
class LibFacts:
    """A library as dlopen found it: path (realpath) when loaded; via_loader
    False when only a full path outside the loader's search path opened it."""

    names: tuple[str, ...]
    path: str | None = None
    loaded_as: str | None = None  # the name (or full path) dlopen took
    via_loader: bool = False
    error: str | None = None
    symbols: dict[str, bool] = field(default_factory=dict)


RTLD_DI_LINKMAP = 2  # <dlfcn.h>


class _LinkMap(ctypes.Structure):
    """The head of glibc's struct link_map: l_addr, then l_name."""

    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


def _loaded_path(lib: ctypes.CDLL, fallback: str) -> str:
    """The file dlopen loaded (dlinfo RTLD_DI_LINKMAP), else fallback."""
    try:
        dlinfo = ctypes.CDLL(None).dlinfo
    except AttributeError:
        return fallback
    dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lm = ctypes.POINTER(_LinkMap)()
    if dlinfo(lib._handle, RTLD_DI_LINKMAP, ctypes.byref(lm)) != 0 or not lm:
        return fallback
    name: bytes | None = lm.contents.l_name
    return os.path.realpath(name.decode(errors="replace")) if name else fallback


def _open_lib(name: str, facts: LibFacts) -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        facts.error = facts.error or " ".join(str(e).split())
        return None
    facts.path = _loaded_path(lib, name)
    facts.loaded_as = name
    return lib


def load_library(names: tuple[str, ...], dirs: tuple[str, ...] = (),
                 symbols: tuple[str, ...] = ()) -> tuple[LibFacts, ctypes.CDLL | None]:
    """dlopen each name through the loader, then each name in each of dirs
    (globs); the symbols' presence by dlsym (getattr: nothing is called).
    error keeps the loader's reason when only a full path opened it."""
    facts = LibFacts(names)
    lib = None
    for name in names:
        lib = _open_lib(name, facts)
        if lib is not None:
            facts.via_loader = "/" not in name
            facts.error = None if facts.via_loader else facts.error
            break
    paths = [os.path.join(d, n) for pat in dirs for d in sorted(glob.glob(pat)) for n in names]
    for path in paths if lib is None else []:
        if os.path.exists(path):
            lib = _open_lib(path, facts)
            if lib is not None:
                break
    if lib is not None:
        facts.symbols = {s: hasattr(lib, s) for s in symbols}
    return facts, lib


class _CuFileError(ctypes.Structure):
    """CUfileError_t: { CUfileOpError err; CUresult cu_err; }, returned by value."""

    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


def cufile_version(lib: ctypes.CDLL) -> tuple[int | None, str | None]:
    """cuFileGetVersion(int *): (version, None) or (None, why)."""
    if not hasattr(lib, "cuFileGetVersion"):
        return None, "no symbol cuFileGetVersion (libcufile older than its introduction)"
    fn = lib.cuFileGetVersion
    fn.restype = _CuFileError
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    v = ctypes.c_int(-1)
    e = fn(ctypes.byref(v))
    if e.err != 0:
        return None, f"cuFileGetVersion failed: err {e.err}, cu_err {e.cu_err}"
    return v.value, None


def _first_line(path: str) -> str | None:
    try:
        lines = _read_text(path, 4096).strip().splitlines()
    except OSError:
        return None
    return " ".join(lines[0].split()) if lines else ""


@dataclass
class CufileConfig:
    path: str
    source: str
    exists: bool = False
    allow_compat: bool | None = None  # properties.allow_compat_mode; None: not set / unknown
    error: str | None = None


def read_cufile_config(env: dict[str, str], paths: SysPaths) -> CufileConfig:
    """The cufile.json in force: $CUFILE_ENV_PATH_JSON, else /etc/cufile.json."""
    if env.get(CUFILE_JSON_ENV):
        c = CufileConfig(env[CUFILE_JSON_ENV], f"${CUFILE_JSON_ENV}")
    else:
        c = CufileConfig(paths.cufile_json, "default")
    try:
        text = _read_text(c.path)
    except FileNotFoundError:
        return c
    except OSError as e:
        c.exists, c.error = True, _errno_text(e)
        return c
    c.exists = True
    try:
        obj = json.loads(strip_json_comments(text))
        value = obj.get("properties", {}).get("allow_compat_mode")
    except (ValueError, AttributeError) as e:
        c.error = f"not JSON after its comments are removed: {' '.join(str(e).split())}"
        return c
    c.allow_compat = value if isinstance(value, bool) else None
    return c


@dataclass
class NvidiaFacts:
    driver: str | None  # /proc/driver/nvidia/version's first line
    libcuda: LibFacts
    libcufile: LibFacts
    version: int | None
    version_error: str | None
    nvfs: str | None  # how nvidia-fs shows itself, None when it does not
    config: CufileConfig


def probe_nvidia(env: dict[str, str], paths: SysPaths) -> NvidiaFacts:
    cuda, _ = load_library(paths.cuda_libs)
    cufile, lib = load_library(paths.cufile_libs, paths.cufile_dirs, ("cuFileGetVersion",))
    version, verr = cufile_version(lib) if lib is not None else (None, "libcufile not loaded")
    nvfs = _first_line(paths.nvfs_version)
    if nvfs is not None:
        nvfs = f"{paths.nvfs_version}: {nvfs}"
    elif os.path.isdir(paths.nvfs_module):
        nvfs = f"{paths.nvfs_module} (module loaded; no {paths.nvfs_version})"
    return NvidiaFacts(_first_line(paths.nvidia_version), cuda, cufile, version, verr, nvfs,
                       read_cufile_config(env, paths))


HIP_SYMBOLS = ("hipGetProcAddress", "hipAmdFileRead", "hipAmdFileWrite")
HSA_SYMBOLS = ("hsa_amd_ais_file_read", "hsa_amd_ais_file_write")
HIPFILE_SYMBOLS = ("hipFileRead", "hipFileWrite")
HIPFILE_ENVS = ("HIPFILE_FORCE_COMPAT_MODE", "HIPFILE_ALLOW_COMPAT_MODE")


@dataclass
class AmdFacts:
    kfd: bool
    amdgpu: bool
    hip: LibFacts
    hsa: LibFacts
    hipfile: LibFacts
    env: dict[str, str]


def probe_amd(env: dict[str, str], paths: SysPaths) -> AmdFacts:
    hip, _ = load_library(paths.hip_libs, paths.rocm_dirs, HIP_SYMBOLS)
    hsa, _ = load_library(paths.hsa_libs, paths.rocm_dirs, HSA_SYMBOLS)
    hipfile, _ = load_library(paths.hipfile_libs, paths.rocm_dirs, HIPFILE_SYMBOLS)
    return AmdFacts(os.path.exists(paths.kfd), os.path.isdir(paths.amdgpu_module), hip, hsa,
                    hipfile, {k: env[k] for k in HIPFILE_ENVS if k in env})


# --------------------------------------------------------------- sections


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _udev_found(s: ScratchFacts) -> str:
    if s.udev_path is None:
        return "unknown (no device)"
    if not s.udev_exists:
        return f"{s.udev_path} does not exist"
    if s.udev is None:
        return f"{s.udev_path}: unreadable: {s.udev_error}"
    u = s.udev
    keys = f"E:ID_FS_USAGE={u.usage or '(none)'}, E:ID_FS_TYPE={u.fs_type or '(none)'}"
    return f"{s.udev_path}: {keys}" + ("" if u.complete else " (incomplete)")


def scratch_section(s: ScratchFacts, users: list[str]) -> Section:
    why = ("needed by " + " and ".join(users)) if users else "no GPU stack present: not needed"
    sec = Section(SCRATCH, bool(users), why)
    found = f"{s.dir} ({s.source})"
    sec.add("directory", f"{found}: {s.error}" if s.error else f"{found}, writable",
            s.error is None, need=True, fix=FIX_SCRATCH)
    if s.device is None:
        return sec
    m = s.mount
    sec.add("filesystem", f"{m.fs_type} ({m.source} mounted at {m.mount_point}, "
            f"mountinfo device {m.device})" if m else "unknown: no mount covers it in mountinfo")
    sec.add("device", f"{s.device} (st_dev)")
    sec.add("block device", f"/sys/dev/block/{s.device} " +
            ("exists" if s.block_device else "does not exist: not backed by a block device"),
            s.block_device, need=True, fix=FIX_SCRATCH)
    if s.odirect is not None:
        sec.add("O_DIRECT", "accepted (a file opened with O_DIRECT, 4 KiB written and read back)"
                if s.odirect else f"refused: {s.odirect_error}", s.odirect, need=True,
                fix=FIX_SCRATCH)
    if s.free_bytes is not None:
        sec.add("free space", _size(s.free_bytes))
    sec.add("udev record", _udev_found(s))
    return sec


def _lib_found(f: LibFacts) -> str:
    if f.path is None:
        return f"not loadable: {f.error}"
    how = f"dlopen {f.loaded_as}" if f.via_loader else "found only by its full path"
    return f"{f.path} ({how})"


def _lib_fix(f: LibFacts, install: str) -> str:
    if f.path is None:
        return install
    d = os.path.dirname(f.path)
    return (f"put {d} on the loader path (echo {d} > /etc/ld.so.conf.d/gpuconform.conf && "
            f"ldconfig, or LD_LIBRARY_PATH={d}): the test binaries dlopen {f.names[0]}")


def _add_lib(sec: Section, name: str, f: LibFacts, install: str, need: bool) -> None:
    met = f.path is not None and f.via_loader
    sec.add(name, _lib_found(f), met if need else (met or None), need=need,
            fix=_lib_fix(f, install))


def _nvidia_mode(nv: NvidiaFacts) -> str:
    if nv.libcufile.path is None:
        return "none: libcufile is not loadable, so there is no cuFile path at all"
    if nv.nvfs:
        return ("GPU-direct possible: nvidia-fs is loaded (cuFile still uses compat mode for a "
                "file GPU-direct cannot serve, where allow_compat_mode permits)")
    return ("compat mode: nvidia-fs is not loaded, so no GPU-direct through it; cuFile serves "
            "requests by POSIX I/O through host bounce buffers (or PCIe P2PDMA where this "
            "cuFile and kernel support it: cufile_io reports the path it saw)")


def _compat_found(c: CufileConfig) -> str:
    where = f"{c.path} ({c.source})"
    if not c.exists:
        return f"{where} does not exist: the library's defaults apply"
    if c.error:
        return f"{where}: {c.error}"
    if c.allow_compat is None:
        return f"{where} does not set properties.allow_compat_mode: the library's default applies"
    return f"{'true' if c.allow_compat else 'false'} in {where}"


def _udev_need(s: ScratchFacts) -> tuple[bool, str, str]:
    """(met, found, fix) of cuFile's udev record requirement."""
    if s.udev is not None and s.udev.complete:
        return True, _udev_found(s), ""
    found = (_udev_found(s) + ": cuFile compat mode failed cuFileHandleRegister with 5027 "
             "(CU_FILE_HANDLE_NOT_REGISTERED) without it on the H100 machine")
    if not s.block_device or s.mount is None:
        return False, found, "first put the scratch directory on a block device (see above)"
    return False, found, (f"run `gpuconform doctor --fix` as root (adds E:ID_FS_USAGE=filesystem "
                          f"and E:ID_FS_TYPE={s.mount.fs_type} to {s.udev_path})")


def nvidia_section(nv: NvidiaFacts, s: ScratchFacts) -> Section:
    why = ("present: NVIDIA driver loaded" if nv.driver is not None
           else "not present: no /proc/driver/nvidia/version (no NVIDIA driver loaded)")
    sec = Section(NVIDIA, nv.driver is not None, why)
    sec.add("NVIDIA driver", nv.driver or "not loaded", nv.driver is not None or None)
    _add_lib(sec, "libcuda.so.1", nv.libcuda,
             "install the NVIDIA driver's user-space library, matching the kernel driver", True)
    _add_lib(sec, "libcufile", nv.libcufile, "install libcufile (CUDA's GPUDirect Storage "
             "library; NVIDIA's CUDA repository packages it as libcufile-<major>-<minor>)", True)
    sec.add("cuFile version", decode_cufile_version(nv.version) if nv.version is not None
            else f"unknown: {nv.version_error}")
    sec.add("nvidia-fs", nv.nvfs or "not loaded (no /proc/driver/nvidia-fs/version, "
            "no /sys/module/nvidia_fs)")
    sec.add("mode", _nvidia_mode(nv))
    c = nv.config
    sec.add("allow_compat_mode", _compat_found(c), c.allow_compat, need=nv.nvfs is None,
            fix=f"set \"allow_compat_mode\": true under \"properties\" in {c.path} (or point "
            f"{CUFILE_JSON_ENV} at a copy that does): without nvidia-fs, compat mode is the "
            "only way")
    met, found, fix = _udev_need(s)
    sec.add("udev record", found, met, need=True, fix=fix)
    return sec


def _syms(f: LibFacts, names: tuple[str, ...]) -> bool:
    return f.path is not None and all(f.symbols.get(n) for n in names)


def _entry_point(a: AmdFacts) -> tuple[bool | None, str]:
    """Whether some fastpath entry point is there: (met, found)."""
    have = [name for name, ok in (
        ("hipFile", a.hipfile.path is not None and a.hipfile.via_loader),
        ("hipAmdFileRead/Write", _syms(a.hip, HIP_SYMBOLS[1:])),
        ("hsa_amd_ais_file_read/write", _syms(a.hsa, HSA_SYMBOLS))) if ok]
    if have:
        return True, ", ".join(have)
    if a.hip.symbols.get("hipGetProcAddress"):
        return None, ("none by dlsym; hipGetProcAddress may still return hipAmdFileRead/Write "
                      "(doctor does not call into HIP: hipfile_io asks it)")
    return False, "none: no hipFile, no hipAmdFileRead/Write, no hsa_amd_ais_file_read/write"


def _sym_found(f: LibFacts, names: tuple[str, ...]) -> tuple[str, bool | None]:
    """(found, met) of symbols looked up by dlsym: met True when all are there."""
    if f.path is None:
        return "library not loaded", None
    have = [n for n in names if f.symbols.get(n)]
    lack = [n for n in names if not f.symbols.get(n)]
    text = "; ".join(p for p in (f"exported: {', '.join(have)}" if have else "",
                                 f"not exported (dlsym): {', '.join(lack)}" if lack else "") if p)
    return f"{text} ({os.path.basename(f.path)})", (not lack) or None


def _amd_mode(entry: bool | None, env: dict[str, str]) -> str:
    if entry is None:
        return "cannot be told without calling into HIP (see fastpath entry point)"
    if not entry:
        return "no GPU-direct entry point found: only a fallback through host memory"
    knobs = ", ".join(f"{k}={v}" for k, v in env.items()) or "HIPFILE_*_COMPAT_MODE unset"
    return f"GPU-direct possible; hipFile picks its fastpath or its fallback per request ({knobs})"


def amd_section(a: AmdFacts) -> Section:
    why = ("present: /dev/kfd exists" if a.kfd
           else "not present: no /dev/kfd (no amdgpu KFD)")
    sec = Section(AMD, a.kfd, why)
    sec.add("/dev/kfd", "exists" if a.kfd else "does not exist", a.kfd or None)
    sec.add("amdgpu module", "/sys/module/amdgpu " + ("exists" if a.amdgpu else "does not exist"),
            a.amdgpu, need=True, fix="load the amdgpu kernel module (modprobe amdgpu)")
    _add_lib(sec, "libamdhip64", a.hip, "install the ROCm HIP runtime (libamdhip64)", True)
    sec.add("hipGetProcAddress", *_sym_found(a.hip, HIP_SYMBOLS[:1]))
    sec.add("hipAmdFileRead / hipAmdFileWrite", *_sym_found(a.hip, HIP_SYMBOLS[1:]))
    _add_lib(sec, "libhsa-runtime64", a.hsa, FIX_ROCM, False)
    sec.add("hsa_amd_ais_file_read / _write", *_sym_found(a.hsa, HSA_SYMBOLS))
    _add_lib(sec, "libhipfile", a.hipfile, FIX_ROCM, False)
    met, found = _entry_point(a)
    sec.add("fastpath entry point", found, met, need=True, fix=FIX_ROCM)
    sec.add("mode", _amd_mode(met, a.env))
    return sec


# -------------------------------------------------------------------- fix


@dataclass
class FixResult:
    path: str
    action: str  # "created", "appended", "none", "failed"
    wrote: str
    message: str

    @property
    def ok(self) -> bool:
        return self.action != "failed"


def _write_all(fd: int, text: str) -> None:
    data = text.encode()
    while data:
        data = data[os.write(fd, data):]


def _write_record(path: str, text: str, create: bool) -> None:
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if create else os.O_APPEND)
    if create:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    fd = os.open(path, flags, 0o644)
    try:
        _write_all(fd, text)
    finally:
        os.close(fd)


def _fix_blocker(s: ScratchFacts) -> str | None:
    """Why no udev record can be written for the scratch device, or None."""
    if s.device is None:
        return f"scratch dir {s.dir}: {s.error}"
    if not s.block_device:
        return f"scratch dir {s.dir} is not on a block device ({s.device}): {FIX_SCRATCH}"
    if s.mount is None:
        return f"scratch dir {s.dir}: no mount covers it in mountinfo (filesystem type unknown)"
    if s.udev_exists and s.udev is None:
        return f"{s.udev_path}: {s.udev_error}"
    return None


def apply_udev_fix(s: ScratchFacts) -> FixResult:
    """Write the scratch device's missing udev record keys; never overwrite."""
    path = s.udev_path or "(no udev record path)"
    blocker = _fix_blocker(s)
    if blocker is not None:
        return FixResult(path, "failed", "", f"nothing written: {blocker}")
    assert s.mount is not None
    try:
        existing = _read_text(path) if s.udev_exists else ""
        text = udev_fix_text(s.udev, s.mount.fs_type, existing)
        if text:
            _write_record(path, text, create=not s.udev_exists)
    except OSError as e:
        return FixResult(path, "failed", "", f"nothing written: {path}: {_errno_text(e)}")
    if not text:
        return FixResult(path, "none", "", f"nothing written: {path} already has "
                         "E:ID_FS_USAGE= and E:ID_FS_TYPE=")
    if not s.udev_exists:
        return FixResult(path, "created", text, f"created {path}; wrote:")
    added = " and ".join(k for k in ("E:ID_FS_USAGE=", "E:ID_FS_TYPE=") if k in text)
    return FixResult(path, "appended", text,
                     f"{path} existed without {added}: appended:")


def check_fix_allowed(env: dict[str, str]) -> None:
    """--fix needs root to write the real /run/udev/data; the test seam
    ($GPUCONFORM_UDEV_DATA_DIR) leaves it to that directory's permissions."""
    if not env.get(UDEV_ENV) and os.geteuid() != 0:
        raise DoctorError(f"doctor --fix writes the udev record under {UDEV_DEFAULT}: "
                          "run it as root")


# ----------------------------------------------------------------- report


@dataclass
class Report:
    scratch: ScratchFacts
    nvidia: NvidiaFacts
    amd: AmdFacts
    sections: list[Section]
    status: int
    line: str
    fix: FixResult | None = None


def diagnose(cli_dir: str | None, env: dict[str, str], paths: SysPaths = SysPaths()) -> Report:
    directory, source = scratch_dir(cli_dir, env)
    s = probe_scratch(directory, source, udev_dir(env), paths)
    nv, amd = probe_nvidia(env, paths), probe_amd(env, paths)
    stacks = [nvidia_section(nv, s), amd_section(amd)]
    sections = [scratch_section(s, [x.name for x in stacks if x.present]), *stacks]
    status, line = verdict(sections)
    return Report(s, nv, amd, sections, status, line)


def render_text(r: Report) -> str:
    out = ["gpuconform doctor: what the fastpath needs, and what this machine has", ""]
    if r.fix is not None:
        out.append(f"fix: {r.fix.message}")
        out += [f"    {line}" for line in r.fix.wrote.splitlines() if line]
        out.append("")
    for sec in r.sections:
        out.append(f"{sec.name}: {sec.why}")
        out += [i.line() for i in sec.items]
        out.append("")
    out.append(f"verdict: {r.line}")
    return "\n".join(out) + "\n"


def to_json(r: Report) -> dict[str, Any]:
    return {
        "status": r.status,
        "verdict": r.line,
        "sections": [asdict(s) for s in r.sections],
        "facts": {"scratch": asdict(r.scratch), "nvidia": asdict(r.nvidia),
                  "amd": asdict(r.amd)},
        "fix": asdict(r.fix) if r.fix is not None else None,
    }


def run_doctor(scratch_dir_opt: str | None = None, *, fix: bool = False, as_json: bool = False,
               out: TextIO | None = None, env: dict[str, str] | None = None,
               paths: SysPaths = SysPaths()) -> int:
    """The command: print the report; the exit status (see the module comment)."""
    env = dict(os.environ) if env is None else env
    out = out or sys.stdout
    if fix:
        check_fix_allowed(env)
    r = diagnose(scratch_dir_opt, env, paths)
    if fix:
        result = apply_udev_fix(r.scratch)
        if result.action in ("created", "appended"):
            r = diagnose(scratch_dir_opt, env, paths)  # what the machine has now
        r.fix = result
        if not result.ok:
            r.status, r.line = 1, f"{r.line}; --fix wrote nothing (see fix above)"
    out.write(json.dumps(to_json(r), indent=2) + "\n" if as_json else render_text(r))
    return r.status
