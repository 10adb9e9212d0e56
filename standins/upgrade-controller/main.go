// STAND-IN for the GPU Operator v26.7.0's driver upgrade controller (controllers/upgrade_controller.go),
// for the local control plane: not an upstream component, but built on the real per-node state machine,
// github.com/NVIDIA/k8s-operator-libs/pkg/upgrade, at the version GPU Operator v26.7.0 vendors, and
// configured as the GPU Operator configures it (../../../shared/reference/day2-upstream.md 1.1-1.4):
//
//   - driver name "gpu" (cmd/gpu-operator/main.go:176), no maintenance-operator requestor (:178-185);
//   - pod deletion of the GPU pods gpuPods picks (:191, filter at :263-287), validation by the pod
//     app=nvidia-operator-validator (:192);
//   - each round reads the ClusterPolicy: no upgradePolicy or autoUpgrade false removes the upgrade
//     state label from every node; otherwise it builds the state of the driver pods labelled
//     app=nvidia-driver-daemonset in the operator's namespace, adds the drain skip label to the drain
//     selector, and applies the state (upgrade_controller.go:118-197);
//   - a round runs when a node's upgrade state label changes or a driver DaemonSet's generation does
//     (upgrade_controller.go:486-495), and again --resync after each (upstream: 2 minutes).
//
// Where it differs, on purpose: it does not watch the ClusterPolicy itself (its CRD comes with a chart,
// after this process starts), so a change of the ClusterPolicy alone is seen at the next resync; it
// leaves out the restart-only predicate (a digest-only change) and DRA claims, which no stand-in makes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	upgradev1alpha1 "github.com/NVIDIA/k8s-operator-libs/api/upgrade/v1alpha1"
	"github.com/NVIDIA/k8s-operator-libs/pkg/upgrade"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	driverLabelKey   = "app"
	driverLabelValue = "nvidia-driver-daemonset"
	validatorPods    = "app=nvidia-operator-validator"
	// Pods with this label are left alone by a drain (upgrade_controller.go, UpgradeSkipDrainLabelSelector).
	skipDrainSelector = "nvidia.com/gpu-driver-upgrade-drain.skip!=true"
)

var clusterPolicyList = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1", Kind: "ClusterPolicyList"}

// gpuPods is the GPU Operator's pod deletion filter (day2-upstream.md 1.4): a Running or Pending pod
// with a regular container that asks for nvidia.com/gpu* or nvidia.com/mig-*; init containers are not
// looked at.
func gpuPods(pod corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
		return false
	}
	asks := func(resources corev1.ResourceList) bool {
		for resource := range resources {
			if strings.HasPrefix(string(resource), "nvidia.com/gpu") || strings.HasPrefix(string(resource), "nvidia.com/mig-") {
				return true
			}
		}
		return false
	}
	for _, container := range pod.Spec.Containers {
		if asks(container.Resources.Limits) || asks(container.Resources.Requests) {
			return true
		}
	}
	return false
}

type reconciler struct {
	client    client.Client
	reader    client.Reader
	states    upgrade.ClusterUpgradeStateManager
	namespace string
	resync    time.Duration
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	found := &unstructured.Unstructured{}
	found.SetGroupVersionKind(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1", Kind: "ClusterPolicy"})
	if err := r.reader.Get(ctx, req.NamespacedName, found); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policy, err := upgradePolicy(found)
	if err != nil {
		return reconcile.Result{}, err
	}
	if policy == nil || !policy.AutoUpgrade {
		return reconcile.Result{}, r.removeStateLabels(ctx)
	}
	state, err := r.states.BuildState(ctx, r.namespace, map[string]string{driverLabelKey: driverLabelValue})
	if err != nil {
		return reconcile.Result{}, err
	}
	// The chart always renders a drain section; upstream dereferences it here.
	if policy.DrainSpec == nil {
		return reconcile.Result{}, fmt.Errorf("ClusterPolicy %s has no spec.driver.upgradePolicy.drain", req.Name)
	}
	if policy.DrainSpec.PodSelector == "" {
		policy.DrainSpec.PodSelector = skipDrainSelector
	} else {
		policy.DrainSpec.PodSelector += "," + skipDrainSelector
	}
	if err := r.states.ApplyState(ctx, state, policy); err != nil {
		log.Error(err, "failed to apply the cluster upgrade state")
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.resync}, nil
}

// upgradePolicy reads spec.driver.upgradePolicy as the GPU Operator's typed ClusterPolicy would.
func upgradePolicy(policy *unstructured.Unstructured) (*upgradev1alpha1.DriverUpgradePolicySpec, error) {
	raw, found, err := unstructured.NestedMap(policy.Object, "spec", "driver", "upgradePolicy")
	if err != nil || !found {
		return nil, err
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	spec := &upgradev1alpha1.DriverUpgradePolicySpec{}
	if err := json.Unmarshal(data, spec); err != nil {
		return nil, fmt.Errorf("spec.driver.upgradePolicy: %w", err)
	}
	return spec, nil
}

func (r *reconciler) removeStateLabels(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes); err != nil {
		return err
	}
	key := upgrade.GetUpgradeStateLabelKey()
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if _, present := node.Labels[key]; present {
			delete(node.Labels, key)
			if err := r.client.Update(ctx, node); err != nil {
				return err
			}
		}
	}
	return nil
}

// policies maps any event to a round for each ClusterPolicy (none while its CRD is not served).
func (r *reconciler) policies(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(clusterPolicyList)
	if err := r.reader.List(ctx, list); err != nil {
		if !meta.IsNoMatchError(err) {
			ctrl.LoggerFrom(ctx).Error(err, "cannot list ClusterPolicies")
		}
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for _, item := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Name: item.GetName()}})
	}
	return requests
}

func ownedByClusterPolicy(object client.Object) bool {
	for _, owner := range object.GetOwnerReferences() {
		if owner.APIVersion == "nvidia.com/v1" && owner.Kind == "ClusterPolicy" {
			return true
		}
	}
	return false
}

func main() {
	namespace := flag.String("namespace", "gpu-operator", "the GPU Operator's namespace")
	resync := flag.Duration("resync", 2*time.Minute, "the wait before a round is run again")
	flag.Parse()
	ctrl.SetLogger(zap.New())

	// controller-runtime registers --kubeconfig itself.
	config, err := ctrl.GetConfig()
	if err != nil {
		fail(err)
	}
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fail(err)
	}
	upgrade.SetDriverName("gpu")
	log := ctrl.Log.WithName("upgrade")
	states, err := upgrade.NewClusterUpgradeStateManager(
		log, config, manager.GetEventRecorderFor("nvidia-gpu-operator"), upgrade.StateOptions{})
	if err != nil {
		fail(err)
	}
	r := &reconciler{
		client:    manager.GetClient(),
		reader:    manager.GetAPIReader(),
		states:    states.WithPodDeletionEnabled(gpuPods).WithValidationEnabled(validatorPods),
		namespace: *namespace,
		resync:    *resync,
	}
	stateChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			key := upgrade.GetUpgradeStateLabelKey()
			return e.ObjectOld.GetLabels()[key] != e.ObjectNew.GetLabels()[key]
		},
	}
	driverDaemonSet := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[driverLabelKey] == driverLabelValue && ownedByClusterPolicy(o)
	})
	err = builder.ControllerManagedBy(manager).
		Named("upgrade-controller").
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.policies), builder.WithPredicates(stateChanged)).
		Watches(&appsv1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(r.policies),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}, driverDaemonSet)).
		Complete(r)
	if err != nil {
		fail(err)
	}
	if err := manager.Start(ctrl.SetupSignalHandler()); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kgf-upgrade-controller:", err)
	os.Exit(1)
}
