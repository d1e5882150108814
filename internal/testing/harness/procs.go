package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a live process: its PID and command line (arguments joined by spaces, cut at 160
// characters).
type Proc struct {
	PID     int
	Cmdline string
}

// String is "<pid> <command line>".
func (p Proc) String() string { return strconv.Itoa(p.PID) + " " + p.Cmdline }

// ProcessesNaming lists the live processes, this one aside, whose command line contains s (a
// work directory: every process a harness starts names it in a flag), zombies left out.
func ProcessesNaming(s string) []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	self := os.Getpid()
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self || !cmdlineNames(pid, s) {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if len(cmd) > 160 {
			cmd = cmd[:160] + "..."
		}
		out = append(out, Proc{PID: pid, Cmdline: cmd})
	}
	return out
}

// cmdlineNames reports whether process pid is alive, not a zombie, and has s in its command line.
func cmdlineNames(pid int, s string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(st[i+1:])), "Z") {
			return false // a zombie is gone but for its parent's wait
		}
	}
	return strings.Contains(string(b), s)
}

// ReapPIDFile SIGTERMs the processes recorded in dir/localcp.pid (pkg/localcp's record of the
// control plane that `manager --local --local-dir=dir` started) whose command line names dir, and
// SIGKILLs those still running 20 s later: what a SIGKILLed manager left behind. No file, or no
// such process, is a no-op.
func ReapPIDFile(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "localcp.pid"))
	if err != nil {
		return
	}
	var pids []int
	for _, f := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == '\n' }) {
		f = strings.TrimSpace(f)
		if v, ok := strings.CutPrefix(f, `"pid":`); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && cmdlineNames(pid, dir) {
				pids = append(pids, pid)
			}
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for cmdlineNames(pid, dir) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if cmdlineNames(pid, dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
