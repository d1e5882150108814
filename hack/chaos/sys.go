package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The host resources a run makes and removes: users, IPv6 addresses on lo, iptables rules.
const (
	userPrefix   = "dp-chaos-"
	ruleComment  = "dnsplane-chaos"
	maxMembers   = 9
	v6TargetBase = "fd00:d1::2"
)

// userName is member m's Unix user.
func userName(m int) string { return userPrefix + strconv.Itoa(m+1) }

// ensureUser makes the system user name (no home, no shell) unless it exists, and returns its ids.
func ensureUser(name string) (uid, gid uint32, err error) {
	if _, err := user.Lookup(name); err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("useradd %s: %w: %s", name, err, out)
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	id, err1 := strconv.ParseUint(u.Uid, 10, 32)
	g, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %s: uid %q gid %q", name, u.Uid, u.Gid)
	}
	return uint32(id), uint32(g), nil
}

// killUserProcesses SIGKILLs every process whose real uid is uid, by its PID, and returns how
// many it signalled. Only the run's own users are ever passed.
func killUserProcesses(uid uint32) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || procUID(d) != int64(uid) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// procUID is the real uid in /proc/<pid>/status, -1 when unreadable.
func procUID(dir string) int64 {
	f, err := os.Open(filepath.Join(dir, "status"))
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				if id, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return id
				}
			}
		}
	}
	return -1
}

// rule is one OUTPUT rule of the run: drop uid user's packets to dst.
func rule(user, dst string) []string {
	return []string{"OUTPUT", "-m", "owner", "--uid-owner", user, "-d", dst, "-m", "comment", "--comment", ruleComment, "-j", "DROP"}
}

// iptables runs iptables (or ip6tables for an IPv6 dst) with op (-I or -D) and r.
func iptables(op string, r []string) error {
	cmd := "iptables"
	if strings.Contains(r[6], ":") {
		cmd = "ip6tables"
	}
	if out, err := exec.Command(cmd, append([]string{"-w", op}, r...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s %s: %w: %s", cmd, op, strings.Join(r, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeRules deletes every OUTPUT rule that carries the run's comment, from both tables, and
// returns how many.
func removeRules() int {
	n := 0
	for _, cmd := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command(cmd, "-w", "-S", "OUTPUT").Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.Contains(line, ruleComment) || !strings.HasPrefix(line, "-A OUTPUT ") {
				continue
			}
			args := append([]string{"-w", "-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)
			if exec.Command(cmd, args...).Run() == nil {
				n++
			}
		}
	}
	return n
}

// v6Target is member m's IPv6 target address.
func v6Target(m int) string { return v6TargetBase + strconv.Itoa(m+1) }

// addAddr adds the IPv6 address to lo.
func addAddr(addr string) error {
	if out, err := exec.Command("ip", "-6", "addr", "add", addr+"/128", "dev", "lo", "nodad").CombinedOutput(); err != nil {
		return fmt.Errorf("ip -6 addr add %s dev lo: %w: %s", addr, err, out)
	}
	return nil
}

// delAddr removes the IPv6 address from lo, reporting whether it was there.
func delAddr(addr string) bool {
	return exec.Command("ip", "-6", "addr", "del", addr+"/128", "dev", "lo").Run() == nil
}

// cleanupHost removes what any run leaves behind: the rules, the IPv6 addresses and the
// processes of the run's users; with users, it deletes the users too. It says what it removed.
func cleanupHost(users bool) string {
	var done []string
	if n := removeRules(); n > 0 {
		done = append(done, fmt.Sprintf("%d iptables rules", n))
	}
	addrs := 0
	for m := range maxMembers {
		if delAddr(v6Target(m)) {
			addrs++
		}
	}
	if addrs > 0 {
		done = append(done, fmt.Sprintf("%d addresses", addrs))
	}
	procs, deleted := 0, 0
	for m := range maxMembers {
		u, err := user.Lookup(userName(m))
		if err != nil {
			continue
		}
		if uid, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			for try := 0; try < 20 && killUserProcesses(uint32(uid)) > 0; try++ {
				procs++
				time.Sleep(250 * time.Millisecond)
			}
		}
		if users && exec.Command("userdel", userName(m)).Run() == nil {
			deleted++
		}
	}
	if procs > 0 {
		done = append(done, fmt.Sprintf("%d processes", procs))
	}
	if deleted > 0 {
		done = append(done, fmt.Sprintf("%d users", deleted))
	}
	return strings.Join(done, ", ")
}
