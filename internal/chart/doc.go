// Package chart holds the tests of the Helm chart charts/dnsplane and of its upgrade story; it has
// no code of its own. They check that:
//   - helm lint is clean with the default and the namespaced values (TestHelmLint);
//   - the chart's files/ are config/'s CRDs and RBAC, as make manifests copies them
//     (TestChartFilesAreConfigs);
//   - the chart and config/default (kustomize) grant the same RBAC rules and run the same
//     Deployment settings (TestChartAgreesWithKustomize);
//   - every object helm template renders, for several value sets, is accepted by a real
//     kube-apiserver in a server-side dry run (TestRenderedChartDryRun);
//   - helm upgrade from an older chart upgrades the CRDs, and helm uninstall keeps them
//     (TestHelmUpgradeUpgradesCRDsAndUninstallKeepsThem, the real helm against envtest);
//   - the manager still reconciles every kind when the installed CRDs are an older release's
//     (TestOlderCRDsStillReconcile);
//   - the dns Service's UDP and TCP ports keep one fixed node port through helm upgrade and
//     helm rollback, or the change is refused with the workaround
//     (TestHelmUpgradeSwitchesTheDNSServiceType, TestHelmRollbackKeepsBothNodePortsOrRefuses);
//   - make chart packages the chart with make version (TestMakeChartFollowsVERSION);
//   - docs/install.md's commands work as written: the values file helm get values recovers
//     (TestHelmGetValuesFileUpgrades), and the kind section's geo step after its samples
//     (TestDocsKindGeoStepAfterTheSamples), read from the docs' sh blocks (docs_test.go).
//
// The helm tests need bin/helm (make helm, hack/helm.sh) and skip with a message without it; make
// test builds it first, so they never skip there. The envtest tests need KUBEBUILDER_ASSETS or
// bin/ (hack/envtest-bins.sh).
package chart
