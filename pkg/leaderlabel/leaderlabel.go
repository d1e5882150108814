package leaderlabel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key is the label the leader's pod carries, with the value "true". The dns Service of
// config/default selects it.
const Key = "dnsplane.io/dns-leader"

// Labeler labels its own pod while this replica leads. It is a controller-runtime
// manager.Runnable that runs in the leader only.
type Labeler struct {
	// Client patches the pod; a direct (uncached) client, allowed get and patch on pods in
	// Namespace.
	Client client.Client
	// Namespace and Pod name this replica's pod (downward API: POD_NAMESPACE, POD_NAME).
	Namespace, Pod string
	// Timeout bounds each patch, a time.Duration; default 10 s.
	Timeout time.Duration
	// Log receives the label changes.
	Log logr.Logger
}

// NeedLeaderElection makes the manager start the Labeler only once this replica leads.
func (l *Labeler) NeedLeaderElection() bool { return true }

// Start labels the pod, waits for ctx to end, then removes the label (best effort, under its
// own timeout, since ctx is over). Errors: the first patch failed.
func (l *Labeler) Start(ctx context.Context) error {
	switch err := l.set(ctx, true); {
	case err != nil && ctx.Err() == nil:
		return err
	case err == nil:
		l.Log.Info("this replica leads: labelled its pod for DNS traffic", "pod", l.Namespace+"/"+l.Pod, "label", Key)
	}
	// Leadership may end while the label patch is in flight: the server may have applied it
	// although the call reports the cancelled context, so the label is removed all the same.
	<-ctx.Done()
	if err := l.set(context.Background(), false); err != nil {
		l.Log.Error(err, "remove the leader label")
	}
	return nil
}

// Clear removes the label from this pod, for use at start before leader election: a container
// restarted in the same pod keeps the label of its previous run. Errors: the patch failed.
func (l *Labeler) Clear(ctx context.Context) error { return l.set(ctx, false) }

// set adds (on) or removes the label with a JSON merge patch (RFC 7386: null deletes a key).
func (l *Labeler) set(ctx context.Context, on bool) error {
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var value any // nil: delete
	if on {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{Key: value}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = l.Namespace, l.Pod
	if err := l.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label pod %s/%s %s=%v: %w", l.Namespace, l.Pod, Key, on, err)
	}
	return nil
}
