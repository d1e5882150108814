package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface whose writes succeed unless err is set.
type fakeLock struct {
	id  string
	err error
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, nil
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) RecordEvent(string)                                              {}
func (l *fakeLock) Identity() string                                                { return l.id }
func (l *fakeLock) Describe() string                                                { return "fake" }

// TestLeaseFence: Check passes only within the renew deadline of a successful Create or Update
// that names this replica as holder; a failed write, or one naming another holder (the release
// of the Lease at a stop), renews nothing; a renewal older than the deadline (a frozen process
// that woke) fails with ErrLeaseNotHeld.
func TestLeaseFence(t *testing.T) {
	ctx := context.Background()
	lock := &fakeLock{id: "me"}
	f := &leaseFence{Interface: lock, within: renewDeadline}
	if err := f.Check(); !errors.Is(err, ErrLeaseNotHeld) {
		t.Fatalf("never renewed: Check = %v, want ErrLeaseNotHeld", err)
	}
	if err := f.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Fatalf("just acquired: Check = %v", err)
	}
	f.renewed = time.Now().Add(-renewDeadline) // a stall as long as the deadline
	if err := f.Check(); !errors.Is(err, ErrLeaseNotHeld) {
		t.Fatalf("renewed %s ago: Check = %v, want ErrLeaseNotHeld", renewDeadline, err)
	}
	if err := f.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); !errors.Is(err, ErrLeaseNotHeld) {
		t.Fatalf("after a write naming another holder: Check = %v, want ErrLeaseNotHeld", err)
	}
	lock.err = errors.New("conflict")
	if err := f.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err == nil {
		t.Fatal("the failing lock's Update succeeded")
	}
	if err := f.Check(); !errors.Is(err, ErrLeaseNotHeld) {
		t.Fatalf("after a failed renewal: Check = %v, want ErrLeaseNotHeld", err)
	}
	lock.err = nil
	if err := f.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Fatalf("renewed again: Check = %v", err)
	}
}
