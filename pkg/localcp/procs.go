package localcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// ErrDirInUse is returned (wrapped) by Start when another live control plane holds the directory.
var ErrDirInUse = errors.New("local control plane directory is in use")

const (
	lockFile = "localcp.lock"
	pidFile  = "localcp.pid"
)

// lockDir takes an exclusive flock on <dir>/localcp.lock. The kernel drops it when its holder
// dies, however it dies, so holding it proves that processes named in the PID file are stale.
// A held lock gives ErrDirInUse naming the holder's PID from <dir>/localcp.pid (a manager left
// running after `kill -9` of the make that started it, typically).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (%s)", ErrDirInUse, dir, lockHolder(dir))
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}

// lockHolder says who holds dir's lock, from the PID file's owner: the dnsplane process that
// started the control plane.
func lockHolder(dir string) string {
	path := filepath.Join(dir, pidFile)
	b, err := os.ReadFile(path)
	var rec pidRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Owner <= 0 {
		return "another dnsplane --local runs on it and has not recorded its PID in " + path + " yet"
	}
	return fmt.Sprintf("another dnsplane --local runs on it: PID %d, as %s records; stop it with `kill %d`, or use another --local-dir", rec.Owner, path, rec.Owner)
}

// proc is one process of a control plane, as recorded in the PID file.
type proc struct {
	Component string `json:"component"`
	PID       int    `json:"pid"`
	// Exe is the binary's path, and StartTime the start time in clock ticks after boot
	// (/proc/<pid>/stat field 22): with the directory in the command line they tell our
	// process from an unrelated one that got the same PID.
	Exe       string `json:"exe"`
	StartTime uint64 `json:"startTime"`
}

type pidRecord struct {
	Owner     int    `json:"owner"`
	Processes []proc `json:"processes"`
}

func writePIDFile(dir string, procs []proc) error {
	b, err := json.MarshalIndent(pidRecord{Owner: os.Getpid(), Processes: procs}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, pidFile), append(b, '\n'), 0o600)
}

func readPIDFile(dir string) ([]proc, error) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec pidRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("parse %s: %w", pidFile, err)
	}
	return rec.Processes, nil
}

// procInfo is what /proc tells about a live process.
type procInfo struct {
	ppid      int
	state     byte
	startTime uint64
	args      []string
}

func readProc(pid int) (procInfo, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:])) // fields[0] is field 3 (state)
	if len(fields) < 20 {
		return procInfo{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ppid, _ := strconv.Atoi(fields[1])
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return procInfo{}, err
	}
	return procInfo{
		ppid:      ppid,
		state:     fields[0][0],
		startTime: start,
		args:      strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"),
	}, nil
}

// ours tells whether p runs exe with a flag naming etcd's data or the run directory of dir
// (each component has one), and so belongs to the control plane of dir and of no other.
func (p procInfo) ours(exe, dir string) bool {
	if len(p.args) == 0 || p.args[0] != exe {
		return false
	}
	data, run := filepath.Join(dir, etcdDataDir), filepath.Join(dir, runDir)
	return slices.ContainsFunc(p.args[1:], func(a string) bool {
		_, v, ok := strings.Cut(a, "=")
		if !ok {
			v = a
		}
		return v == data || strings.HasPrefix(v, data+"/") || strings.HasPrefix(v, run+"/")
	})
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	p, err := readProc(pid)
	return err == nil && p.state != 'Z' && p.state != 'X'
}

// children lists this process's children that run exe with an argument inside dir.
func children(component, exe, dir string) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := readProc(pid)
		if err != nil || p.ppid != os.Getpid() || !p.ours(exe, dir) {
			continue
		}
		out = append(out, proc{Component: component, PID: pid, Exe: exe, StartTime: p.startTime})
	}
	return out
}

// reapStale stops the processes named in <dir>/localcp.pid that are still running: those of a
// predecessor that died without stopping them. It kills only a process whose binary, start time
// and command line (an argument inside dir) match the record. Call it holding the lock.
func reapStale(log logr.Logger, dir string, grace time.Duration) error {
	recorded, err := readPIDFile(dir)
	if err != nil {
		return err
	}
	var errs []error
	// Stop in reverse start order: the controller manager and apiserver before etcd.
	for _, r := range slices.Backward(recorded) {
		p, err := readProc(r.PID)
		if err != nil || !alive(r.PID) {
			continue
		}
		if p.startTime != r.StartTime || !p.ours(r.Exe, dir) {
			log.Info("PID file names a process that is not ours; leaving it alone",
				"component", r.Component, "pid", r.PID)
			continue
		}
		log.Info("stopping stale process of a previous run", "component", r.Component, "pid", r.PID)
		if err := terminate(r.PID, grace); err != nil {
			errs = append(errs, fmt.Errorf("stop stale %s (pid %d): %w", r.Component, r.PID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, pidFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// terminate sends SIGTERM to pid, then SIGKILL after grace, and waits until it has exited.
// It works for processes that are not our children, so it polls instead of waiting.
func terminate(pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitGone(pid, grace) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitGone(pid, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("pid %d still runs after SIGKILL", pid)
}

func waitGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return !alive(pid)
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
