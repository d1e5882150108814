package testrun_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

func TestStart_ReportsAnExitWithItsOutput(t *testing.T) {
	running := testrun.Start(t, exec.Command("sleep", "60"))
	if err := running.Exited(); err != nil {
		t.Fatalf("a running process: Exited = %v, want nil", err)
	}
	gone := testrun.Start(t, exec.Command("sh", "-c", "echo bad config >&2; exit 3"))
	testrun.Eventually(t, 10*time.Second, "the exit reported", func() error {
		err := gone.Exited()
		switch {
		case err == nil:
			return errors.New("still running")
		case !strings.Contains(err.Error(), "bad config") || !strings.Contains(err.Error(), "exit status 3"):
			return fmt.Errorf("Exited = %v, want the exit status and the output", err)
		}
		return nil
	})
}
