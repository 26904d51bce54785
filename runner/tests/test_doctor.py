"""`gpuconform doctor` (doctor.py): the pure pieces directly, the probes over
tmp dirs (SysPaths and the env overrides point them there), --fix against a
fake udev directory ($GPUCONFORM_UDEV_DATA_DIR), and the command itself on
this machine."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gc_testutil import run_launcher
from gpuconform import cli
from gpuconform.doctor import doctor
from gpuconform.doctor.doctor import (
    AMD,
    MISSING,
    NOTE,
    NVIDIA,
    OK,
    SCRATCH,
    AmdFacts,
    CufileConfig,
    DoctorError,
    Item,
    LibFacts,
    Mount,
    NvidiaFacts,
    ScratchFacts,
    Section,
    SysPaths,
    UdevRecord,
)

ITEM_LINE = re.compile(r"(ok|MISSING|note) +[^:]+: .+")

# ------------------------------------------------------------- mountinfo

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 27 0:27 / /va rw,relatime shared:5 - tmpfs tmpfs rw
31 27 259:2 / /var rw,relatime shared:6 master:1 - xfs /dev/nvme0n1p2 rw
32 31 0:45 / /var/tmp rw,relatime - tmpfs tmpfs rw
33 31 259:3 / /var/tmp rw,relatime - ext4 /dev/nvme1n1 rw
34 27 259:4 / /mnt/my\\040disk rw - ext4 /dev/sd\\134x rw
garbage line without separator
"""


def test_parse_mountinfo_fields_optional_fields_and_escapes() -> None:
    mounts = doctor.parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 7  # the garbage line is skipped
    assert mounts[1] == Mount("/", "254:0", "ext4", "/dev/vda")
    assert mounts[3] == Mount("/var", "259:2", "xfs", "/dev/nvme0n1p2")  # two optional fields
    assert mounts[6] == Mount("/mnt/my disk", "259:4", "ext4", "/dev/sd\\x")


@pytest.mark.parametrize("path,mount_point,device", [
    ("/var/tmp/x", "/var/tmp", "259:3"),  # longest prefix; of two on /var/tmp the later
    ("/var/tmp", "/var/tmp", "259:3"),
    ("/var/lib", "/var", "259:2"),
    ("/vary", "/", "254:0"),  # /va and /var are not prefixes of /vary as directories
    ("/mnt/my disk/a", "/mnt/my disk", "259:4"),
    ("/", "/", "254:0"),
])
def test_mount_for_longest_prefix(path: str, mount_point: str, device: str) -> None:
    m = doctor.mount_for(path, doctor.parse_mountinfo(MOUNTINFO))
    assert m is not None and (m.mount_point, m.device) == (mount_point, device)


def test_mount_for_nothing_covers() -> None:
    assert doctor.mount_for("/x", [Mount("/proc", "0:21", "proc", "proc")]) is None


# ------------------------------------------------------------ cufile.json


def test_strip_json_comments_outside_strings_only() -> None:
    text = ('{\n  // a comment with "quotes"\n  "url": "http://example/x", // trailing\n'
            '  "esc": "a\\"//b", /* block\n comment */ "n": 1\n}\n')
    out = doctor.strip_json_comments(text)
    assert json.loads(out) == {"url": "http://example/x", "esc": 'a"//b', "n": 1}
    assert out.count("\n") == text.count("\n")  # line numbers of json errors still match


def test_strip_json_comments_unterminated() -> None:
    assert doctor.strip_json_comments('{"a": 1} /* open') == '{"a": 1} '
    assert doctor.strip_json_comments('"open // string') == '"open // string'


CUFILE_JSON = """{
    // NOTE : Application can override custom configuration via CUFILE_ENV_PATH_JSON
    "logging": { "dir": "/var/log/cufile//x", "level": "ERROR" },
    "properties": {
        // allow compat mode, this will enable use of cuFile posix read/writes
        "allow_compat_mode": %s,
        "max_direct_io_size_kb" : 16384
    }
}
"""


@pytest.mark.parametrize("value,want", [("true", True), ("false", False), ('"yes"', None)])
def test_read_cufile_config_from_env_path(tmp_path: Path, value: str, want: bool | None) -> None:
    f = tmp_path / "cufile.json"
    f.write_text(CUFILE_JSON % value)
    c = doctor.read_cufile_config({"CUFILE_ENV_PATH_JSON": str(f)}, SysPaths())
    assert (c.path, c.source, c.exists, c.allow_compat, c.error) == (
        str(f), "$CUFILE_ENV_PATH_JSON", True, want, None)


def test_read_cufile_config_missing_and_broken(tmp_path: Path) -> None:
    paths = SysPaths(cufile_json=str(tmp_path / "etc-cufile.json"))
    c = doctor.read_cufile_config({}, paths)
    assert (c.path, c.source, c.exists, c.allow_compat) == (paths.cufile_json, "default", False,
                                                            None)
    Path(paths.cufile_json).write_text('{"properties": {"allow_compat_mode": true,}}')
    c = doctor.read_cufile_config({"CUFILE_ENV_PATH_JSON": ""}, paths)
    assert c.exists and c.allow_compat is None and c.error is not None
    assert c.error.startswith("not JSON after its comments are removed")


# ------------------------------------------------------------------- udev


@pytest.mark.parametrize("text,usage,fs_type,complete", [
    ("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n", "filesystem", "ext4", True),
    ("S:disk/by-uuid/1\nE:ID_FS_TYPE=xfs\nE:ID_FS_TYPE_VERSION=1", "", "xfs", False),
    ("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=\n", "filesystem", "", False),
    ("E:ID_FS_TYPE=ext4\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=xfs", "filesystem", "xfs", True),
    ("E:ID_FS_USAGE=filesystem\nE:ID_FS_USAGE=\nE:ID_FS_TYPE=ext4\n", "", "ext4", False),
    ("I:123\nE:ID_FS_USAGEX=filesystem\nG:systemd\n", "", "", False),
    ("", "", "", False),
])
def test_parse_udev_record(text: str, usage: str, fs_type: str, complete: bool) -> None:
    r = doctor.parse_udev_record(text)
    assert (r.usage, r.fs_type, r.complete) == (usage, fs_type, complete)


def test_udev_fix_text() -> None:
    both = "E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n"
    assert doctor.udev_fix_text(None, "ext4") == both
    assert doctor.udev_fix_text(UdevRecord(), "ext4", "S:x\n") == both
    assert doctor.udev_fix_text(UdevRecord("filesystem", ""), "xfs", "E:ID_FS_USAGE=filesystem") \
        == "\nE:ID_FS_TYPE=xfs\n"
    assert doctor.udev_fix_text(UdevRecord("", "ext4"), "ext4", "E:ID_FS_TYPE=ext4\n") \
        == "E:ID_FS_USAGE=filesystem\n"
    assert doctor.udev_fix_text(UdevRecord("filesystem", "ext4"), "ext4", "x") == ""


# ----------------------------------------------------- version and verdict


@pytest.mark.parametrize("raw,text", [
    (1070, "1070 = 1.7 (1000*major + 10*minor)"),
    (1150, "1150 = 1.15 (1000*major + 10*minor)"),
    (2120, "2120 = 2.12 (1000*major + 10*minor)"),
    (1153, "1153 = 1.15 (1000*major + 10*minor), and 3 in the units digit, which that rule "
           "does not use"),
])
def test_decode_cufile_version(raw: int, text: str) -> None:
    assert doctor.decode_cufile_version(raw) == text


@pytest.mark.parametrize("met,needed,status", [
    (True, True, OK), (True, False, OK), (False, True, MISSING), (False, False, NOTE),
    (None, True, NOTE), (None, False, NOTE),
])
def test_item_status(met: bool | None, needed: bool, status: str) -> None:
    assert doctor.item_status(met, needed) == status


def test_section_add_missing_only_in_a_present_section() -> None:
    here, absent = Section(NVIDIA, True, "x"), Section(AMD, False, "y")
    for sec in (here, absent):
        sec.add("lib", "not loadable", False, need=True, fix="install it")
        sec.add("fact", "42", fix="never shown")
    assert [i.status for i in here.items] == [MISSING, NOTE]
    assert [i.status for i in absent.items] == [NOTE, NOTE]
    assert here.items[0].line() == "MISSING  lib: not loadable -> install it"
    assert absent.items[0].line() == "note     lib: not loadable"  # no fix for a note
    assert here.items[1].fix == ""  # a fix only where the item is not met


def test_verdict() -> None:
    ok = Section(NVIDIA, True, "", [Item("a", OK, "x")])
    absent = Section(AMD, False, "", [Item("b", NOTE, "y")])
    scratch = Section(SCRATCH, True, "", [Item("dir", OK, "z")])
    assert doctor.verdict([scratch, ok, absent]) == (0, f"every item {NVIDIA} need(s) is ok")
    status, line = doctor.verdict([Section(SCRATCH, False, ""), absent])
    assert status == 0 and line.startswith("no GPU stack present")
    scratch.items.append(Item("O_DIRECT", MISSING, "refused"))
    ok.items.append(Item("udev record", MISSING, "none"))
    assert doctor.verdict([scratch, ok, absent]) == (
        1, f"2 needed item(s) MISSING: {SCRATCH}: O_DIRECT; {NVIDIA}: udev record")


def test_scratch_dir_rule() -> None:
    assert doctor.scratch_dir(None, {}) == ("/var/tmp", "default; $GPUCONFORM_SCRATCH_DIR unset")
    assert doctor.scratch_dir(None, {"GPUCONFORM_SCRATCH_DIR": ""})[0] == "/var/tmp"
    assert doctor.scratch_dir(None, {"GPUCONFORM_SCRATCH_DIR": "/a"}) == (
        "/a", "$GPUCONFORM_SCRATCH_DIR")
    assert doctor.scratch_dir("/b", {"GPUCONFORM_SCRATCH_DIR": "/a"}) == ("/b", "--scratch-dir")
    assert doctor.udev_dir({}) == "/run/udev/data"
    assert doctor.udev_dir({"GPUCONFORM_UDEV_DATA_DIR": "/u"}) == "/u"


# ------------------------------------------------------- stack sections


def _lib(path: str | None, via_loader: bool = True, **symbols: bool) -> LibFacts:
    return LibFacts(("libx.so.1",), path, "libx.so.1" if path else None, via_loader,
                    None if path else "libx.so.1: cannot open shared object file", symbols)


def _scratch(udev: UdevRecord | None, block: bool = True) -> ScratchFacts:
    return ScratchFacts("/data", "--scratch-dir", None, Mount("/data", "259:1", "ext4", "/dev/n"),
                        "259:1", block, True, None, 1 << 30, "/run/udev/data/b259:1",
                        udev is not None, udev)


def _nvidia(*, driver: bool = True, nvfs: str | None = None, compat: bool | None = True,
            cufile_via_loader: bool = True) -> NvidiaFacts:
    return NvidiaFacts("NVRM version: 570" if driver else None, _lib("/usr/lib/libcuda.so.1"),
                       _lib("/usr/local/cuda/lib64/libcufile.so.1.15.0", cufile_via_loader),
                       1150, None, nvfs, CufileConfig("/etc/cufile.json", "default", True, compat))


def _status(sec: Section) -> dict[str, str]:
    return {i.name: i.status for i in sec.items}


def test_nvidia_h100_like_compat_machine_is_ok() -> None:
    sec = doctor.nvidia_section(_nvidia(), _scratch(UdevRecord("filesystem", "ext4")))
    assert sec.present and MISSING not in _status(sec).values()
    assert _status(sec)["udev record"] == OK and _status(sec)["allow_compat_mode"] == OK
    mode = next(i.found for i in sec.items if i.name == "mode")
    assert mode.startswith("compat mode: nvidia-fs is not loaded")


def test_nvidia_missing_udev_record_and_compat_refused() -> None:
    sec = doctor.nvidia_section(_nvidia(compat=False), _scratch(None))
    st = _status(sec)
    assert st["udev record"] == MISSING and st["allow_compat_mode"] == MISSING
    udev = next(i for i in sec.items if i.name == "udev record")
    assert "5027" in udev.found and "gpuconform doctor --fix" in udev.fix
    assert "E:ID_FS_TYPE=ext4" in udev.fix and "/run/udev/data/b259:1" in udev.fix
    assert doctor.verdict([sec])[0] == 1


def test_nvidia_compat_flag_matters_only_without_nvidia_fs() -> None:
    sec = doctor.nvidia_section(_nvidia(nvfs="/proc/driver/nvidia-fs/version: 2.20",
                                        compat=False), _scratch(UdevRecord("filesystem", "xfs")))
    assert _status(sec)["allow_compat_mode"] == NOTE
    assert next(i.found for i in sec.items if i.name == "mode").startswith("GPU-direct possible")
    unknown = doctor.nvidia_section(_nvidia(compat=None), _scratch(UdevRecord("filesystem", "x")))
    assert _status(unknown)["allow_compat_mode"] == NOTE  # the library default: cannot tell


def test_nvidia_library_off_the_loader_path_is_missing_with_the_loader_fix() -> None:
    sec = doctor.nvidia_section(_nvidia(cufile_via_loader=False),
                                _scratch(UdevRecord("filesystem", "ext4")))
    item = next(i for i in sec.items if i.name == "libcufile")
    assert item.status == MISSING and "found only by its full path" in item.found
    assert "ldconfig" in item.fix and "/usr/local/cuda/lib64" in item.fix


def test_nvidia_absent_has_no_missing_item() -> None:
    sec = doctor.nvidia_section(_nvidia(driver=False, compat=False), _scratch(None, block=False))
    assert not sec.present and MISSING not in _status(sec).values()
    assert doctor.verdict([sec])[0] == 0


def _amd(kfd: bool, hip: LibFacts, hsa: LibFacts | None = None,
         hipfile: LibFacts | None = None) -> AmdFacts:
    return AmdFacts(kfd, kfd, hip, hsa or _lib(None), hipfile or _lib(None), {})


def test_amd_entry_points() -> None:
    debian = _lib("/usr/lib/libamdhip64.so.5", hipGetProcAddress=False, hipAmdFileRead=False,
                  hipAmdFileWrite=False)
    sec = doctor.amd_section(_amd(True, debian))
    assert _status(sec)["fastpath entry point"] == MISSING
    assert _status(doctor.amd_section(_amd(False, debian)))["fastpath entry point"] == NOTE
    proc_only = _lib("/opt/rocm/lib/libamdhip64.so.7", hipGetProcAddress=True,
                     hipAmdFileRead=False, hipAmdFileWrite=False)
    sec = doctor.amd_section(_amd(True, proc_only))
    assert _status(sec)["fastpath entry point"] == NOTE  # only calling HIP could tell
    assert _status(sec)["hipGetProcAddress"] == OK
    assert doctor.verdict([sec])[0] == 0
    hsa = _lib("/opt/rocm/lib/libhsa-runtime64.so.1", hsa_amd_ais_file_read=True,
               hsa_amd_ais_file_write=True)
    sec = doctor.amd_section(_amd(True, debian, hsa))
    assert _status(sec)["fastpath entry point"] == OK
    assert _status(sec)["hsa_amd_ais_file_read / _write"] == OK


# --------------------------------------------------------------- probes


def _fake_system(tmp_path: Path, *, block: bool = True, fs: str = "ext4") -> tuple[Path, SysPaths]:
    """A scratch dir, a mountinfo naming it, /sys/dev/block with (or without) its device."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    st = os.stat(scratch)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    mi = tmp_path / "mountinfo"
    real = os.path.realpath(scratch).replace(" ", "\\040")
    mi.write_text(f"1 0 {dev} / / rw - proc none rw\n2 1 {dev} / {real} rw - {fs} /dev/fake rw\n")
    sysblock = tmp_path / "sys-dev-block"
    sysblock.mkdir()
    if block:
        (sysblock / dev).mkdir()
    none = str(tmp_path / "absent")
    return scratch, SysPaths(mountinfo=str(mi), sys_dev_block=str(sysblock), nvidia_version=none,
                             nvfs_version=none, nvfs_module=none, cufile_json=none, kfd=none,
                             amdgpu_module=none)


def test_probe_scratch(tmp_path: Path) -> None:
    scratch, paths = _fake_system(tmp_path, fs="xfs")
    udev = tmp_path / "udev"
    udev.mkdir()
    s = doctor.probe_scratch(str(scratch), "test", str(udev), paths)
    assert s.error is None and s.block_device and s.mount is not None
    assert s.mount.fs_type == "xfs" and s.mount.mount_point == os.path.realpath(scratch)
    assert s.udev_path == str(udev / f"b{s.device}") and not s.udev_exists
    assert s.free_bytes is not None and s.free_bytes >= 0
    assert list(scratch.iterdir()) == []  # the O_DIRECT probe file is gone
    Path(s.udev_path).write_text("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=xfs\n")
    s = doctor.probe_scratch(str(scratch), "test", str(udev), paths)
    assert s.udev_exists and s.udev == UdevRecord("filesystem", "xfs")


def test_probe_scratch_unusable(tmp_path: Path) -> None:
    s = doctor.probe_scratch(str(tmp_path / "nope"), "test", str(tmp_path), SysPaths())
    assert s.error is not None and "No such file or directory" in s.error and s.device is None
    (tmp_path / "file").write_text("")
    assert doctor.probe_scratch(str(tmp_path / "file"), "t", str(tmp_path),
                                SysPaths()).error == "not a directory"
    sec = doctor.scratch_section(s, ["NVIDIA cuFile"])
    assert [i.status for i in sec.items] == [MISSING]


def test_probe_odirect_refused_is_reported_and_cleaned_up(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refuse(path: str, flags: int, *a: int) -> int:
        if flags & os.O_DIRECT:
            raise OSError(22, "Invalid argument")
        return real_open(path, flags, *a)

    monkeypatch.setattr(doctor.os, "open", refuse)
    assert doctor.probe_odirect(str(tmp_path)) == (
        False, "open(O_DIRECT): Invalid argument (errno 22)")
    assert list(tmp_path.iterdir()) == []


def test_probe_odirect_accepted_here(tmp_path: Path) -> None:
    ok, why = doctor.probe_odirect(str(tmp_path))
    if not ok:
        pytest.skip(f"{tmp_path}'s filesystem refuses O_DIRECT: {why}")
    assert why is None and list(tmp_path.iterdir()) == []


def test_load_library_through_the_loader_and_symbols() -> None:
    facts, lib = doctor.load_library(("libgpuconform-none.so.9", "libc.so.6"), (),
                                     ("printf", "gpuconform_no_such_symbol"))
    assert lib is not None and facts.via_loader and facts.loaded_as == "libc.so.6"
    assert facts.path is not None and os.path.isabs(facts.path) and facts.error is None
    assert facts.symbols == {"printf": True, "gpuconform_no_such_symbol": False}
    facts, lib = doctor.load_library(("libgpuconform-none.so.9",))
    assert lib is None and facts.path is None and "libgpuconform-none.so.9" in str(facts.error)


FAKE_CUFILE = """
typedef struct { int err; int cu_err; } fake_err;
fake_err cuFileGetVersion(int *v) { fake_err e = { %d, %d }; *v = %d; return e; }
"""


def _fake_lib(d: Path, err: int, cu_err: int, version: int) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a fake libcufile")
    d.mkdir()
    src = d / "fake.c"
    src.write_text(FAKE_CUFILE % (err, cu_err, version))
    lib = d / "libgpuconform-fakecufile.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def test_cufile_version_through_ctypes(tmp_path: Path) -> None:
    good = _fake_lib(tmp_path / "good", 0, 0, 1150)
    facts, lib = doctor.load_library(("libgpuconform-fakecufile.so",), (str(good.parent),),
                                     ("cuFileGetVersion",))
    assert lib is not None and facts.path == str(good) and not facts.via_loader
    assert facts.error is not None  # the loader's reason, kept
    assert doctor.cufile_version(lib) == (1150, None)
    bad = _fake_lib(tmp_path / "bad", 5011, 100, 0)
    _, lib = doctor.load_library((str(bad),))
    assert lib is not None
    assert doctor.cufile_version(lib) == (None, "cuFileGetVersion failed: err 5011, cu_err 100")


# ------------------------------------------------------------------ --fix


def _env(tmp_path: Path, scratch: Path) -> dict[str, str]:
    return {"GPUCONFORM_SCRATCH_DIR": str(scratch),
            "GPUCONFORM_UDEV_DATA_DIR": str(tmp_path / "udev" / "data")}


def test_fix_creates_the_record_then_leaves_it(tmp_path: Path) -> None:
    scratch, paths = _fake_system(tmp_path)
    env = _env(tmp_path, scratch)
    out = io.StringIO()
    assert doctor.run_doctor(fix=True, out=out, env=env, paths=paths) == 0
    st = os.stat(scratch)
    record = tmp_path / "udev" / "data" / f"b{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    assert record.read_text() == "E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n"
    text = out.getvalue()
    assert f"fix: created {record}; wrote:\n    E:ID_FS_USAGE=filesystem\n    E:ID_FS_TYPE=ext4\n" \
        in text
    assert f"note     udev record: {record}: E:ID_FS_USAGE=filesystem, E:ID_FS_TYPE=ext4" in text
    out = io.StringIO()
    assert doctor.run_doctor(fix=True, as_json=True, out=out, env=env, paths=paths) == 0
    fix = json.loads(out.getvalue())["fix"]
    assert fix["action"] == "none" and "already has" in fix["message"] and fix["wrote"] == ""
    assert record.read_text() == "E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n"


def test_fix_appends_only_the_missing_key(tmp_path: Path) -> None:
    scratch, paths = _fake_system(tmp_path, fs="xfs")
    env = _env(tmp_path, scratch)
    st = os.stat(scratch)
    record = Path(env["GPUCONFORM_UDEV_DATA_DIR"]) / f"b{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    record.parent.mkdir(parents=True)
    record.write_text("S:disk/by-id/x\nE:ID_FS_USAGE=filesystem")  # no final newline
    out = io.StringIO()
    assert doctor.run_doctor(fix=True, out=out, env=env, paths=paths) == 0
    assert record.read_text() == "S:disk/by-id/x\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=xfs\n"
    assert f"fix: {record} existed without E:ID_FS_TYPE=: appended:\n    E:ID_FS_TYPE=xfs\n" \
        in out.getvalue()


def test_fix_refuses_a_scratch_dir_without_block_device(tmp_path: Path) -> None:
    scratch, paths = _fake_system(tmp_path, block=False)
    env = _env(tmp_path, scratch)
    out = io.StringIO()
    assert doctor.run_doctor(fix=True, out=out, env=env, paths=paths) == 1
    assert "fix: nothing written: scratch dir" in out.getvalue()
    assert "is not on a block device" in out.getvalue()
    assert out.getvalue().endswith("; --fix wrote nothing (see fix above)\n")
    assert not (tmp_path / "udev").exists()


def test_fix_needs_root_for_the_real_udev_dir(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(doctor, "UDEV_DEFAULT", str(tmp_path / "real-udev"))  # in case
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 1000)
    monkeypatch.delenv("GPUCONFORM_UDEV_DATA_DIR", raising=False)
    with pytest.raises(DoctorError, match="run it as root"):
        doctor.run_doctor(fix=True, out=io.StringIO(), env={})
    assert cli.main(["doctor", "--fix"]) == 2
    assert capsys.readouterr().err == (f"gpuconform: doctor --fix writes the udev record "
                                       f"under {tmp_path / 'real-udev'}: run it as root\n")
    assert not (tmp_path / "real-udev").exists()


# --------------------------------------------------- the command, here


def test_doctor_on_this_machine() -> None:
    r = run_launcher(["doctor"], dict(os.environ), None)
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.splitlines()
    items = [x for x in lines if x.split(" ")[0] in (OK, MISSING, NOTE)]
    assert items and all(ITEM_LINE.fullmatch(x) for x in items)
    for head in (SCRATCH, NVIDIA, AMD):
        assert any(x.startswith(head + ": ") for x in lines), head
    assert lines[-1].startswith("verdict: ")
    assert (MISSING in [x.split(" ")[0] for x in items]) == (r.returncode == 1)


def test_doctor_json_on_this_machine(tmp_path: Path) -> None:
    r = run_launcher(["doctor", "--json", "--scratch-dir", str(tmp_path)], dict(os.environ), None)
    assert r.returncode in (0, 1), r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == r.returncode and data["fix"] is None
    assert [s["name"] for s in data["sections"]] == [SCRATCH, NVIDIA, AMD]
    assert data["facts"]["scratch"]["dir"] == str(tmp_path)
    assert data["facts"]["scratch"]["source"] == "--scratch-dir"
    assert list(tmp_path.iterdir()) == []


def test_doctor_names_a_missing_scratch_dir(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    r = run_launcher(["doctor", "--scratch-dir", str(gone)], dict(os.environ), None)
    line = next(x for x in r.stdout.splitlines() if " directory: " in x)
    assert f"directory: {gone} (--scratch-dir): No such file or directory (errno 2)" in line
