/**
 * Kiali's validations for ambient mode (its `models/istio_validation.go` on the main branch of 2026-08-20:
 * the 21 whose message speaks of ambient, waypoints or L7 resources there), each mapped to the kfmesh rules that find the same
 * problem from the files, or to why none does. Kiali reads a live cluster; kfmesh reads the configuration.
 * docs/analyzers.md renders this table; a test checks that every rule named exists.
 */

/** One Kiali validation and kfmesh's answer to it. */
export interface KialiValidation {
  code: string;
  /** Kiali's message, as it reads. */
  message: string;
  /** The kfmesh rules that find it (empty where none does). */
  rules: readonly string[];
  note: string;
}

export const kialiAmbientValidations: readonly KialiValidation[] = [
  {
    code: 'KIA0109',
    message: 'L7 AuthorizationPolicy in Ambient namespace requires waypoint enrollment',
    rules: ['KFM201', 'KFM211'],
    note: 'KFM201 for one that selects ambient pods (ztunnel denies everything, or never matches); KFM211 for one whose targetRefs name a Service no waypoint serves, and why',
  },
  {
    code: 'KIA0110',
    message:
      'L7 AuthorizationPolicy in Ambient requires targetRefs; selector policies are ignored by waypoints',
    rules: ['KFM201', 'KFM210'],
    note: 'KFM201 on ambient pods, KFM210 where the selector picks a waypoint or gateway pod',
  },
  {
    code: 'KIA0210',
    message: 'L7 DestinationRule features in Ambient namespace require waypoint enrollment',
    rules: [],
    note: 'not covered: kfmesh simulates DestinationRule subsets and TLS, not connection pools, outlier detection or load balancing, so it cannot say which features are L7',
  },
  {
    code: 'KIA0211',
    message: 'L7 DestinationRule targets a service not enrolled to use a waypoint',
    rules: [],
    note: 'not covered, as KIA0210',
  },
  {
    code: 'KIA0212',
    message: 'L7 DestinationRule should be in the same namespace as the Ambient destination service',
    rules: [],
    note: 'not covered, as KIA0210',
  },
  {
    code: 'KIA1109',
    message: 'L7 VirtualService for mesh traffic in Ambient namespace requires waypoint enrollment',
    rules: [],
    note: 'not covered as a finding: the simulator applies no VirtualService to ambient clients or at waypoints (docs/semantics.md, Waypoints), and the migration turns mesh routes into HTTPRoutes on the Service',
  },
  {
    code: 'KIA1113',
    message: 'L7 VirtualService targets a service not enrolled to use a waypoint',
    rules: [],
    note: 'not covered, as KIA1109',
  },
  {
    code: 'KIA1114',
    message: 'L7 VirtualService should be in the same namespace as the Ambient destination service',
    rules: [],
    note: 'not covered, as KIA1109',
  },
  {
    code: 'KIA1110',
    message: 'RequestAuthentication in Ambient namespace requires waypoint enrollment',
    rules: ['KFM214', 'KFM211'],
    note: 'KFM214 where it selects ambient pods; KFM211 where its targetRefs name a Service no waypoint serves',
  },
  {
    code: 'KIA1115',
    message:
      'RequestAuthentication in Ambient requires targetRefs; selector policies are ignored by waypoints',
    rules: ['KFM214', 'KFM210'],
    note: 'KFM214 on ambient pods, KFM210 on waypoint or gateway pods',
  },
  {
    code: 'KIA1111',
    message: 'WasmPlugin in Ambient namespace requires waypoint enrollment',
    rules: ['KFM214'],
    note: 'where it selects ambient pods',
  },
  {
    code: 'KIA1116',
    message: 'WasmPlugin in Ambient requires targetRefs; selector policies are ignored by waypoints',
    rules: ['KFM214', 'KFM210'],
    note: 'KFM214 on ambient pods, KFM210 on waypoint or gateway pods',
  },
  {
    code: 'KIA1112',
    message: 'L7 Telemetry in Ambient namespace requires waypoint enrollment',
    rules: [],
    note: 'not covered: kfmesh does not model which Telemetry settings ztunnel honours (it reports L4 metrics itself)',
  },
  {
    code: 'KIA1117',
    message: 'L7 Telemetry in Ambient requires targetRefs; selector policies are ignored by waypoints',
    rules: ['KFM210'],
    note: 'on waypoint and gateway pods; on ambient pods not covered, as KIA1112',
  },
  {
    code: 'KIA1311',
    message: 'This workload has both sidecar and Ambient label',
    rules: ['KFM206'],
    note: 'at the namespace (injection and ambient labels together: pods keep sidecars); a pod-level pair is not judged',
  },
  {
    code: 'KIA1312',
    message: 'This workload has waypoint labels but is not in Ambient',
    rules: [],
    note: 'not covered: a use-waypoint label outside ambient does nothing, and kfmesh does not report labels that do nothing there',
  },
  {
    code: 'KIA1313',
    message: 'This workload has annotated waypoint but it does not exist or is misconfigured',
    rules: ['KFM202', 'KFM212'],
    note: 'KFM202 for a waypoint that does not exist; KFM212 for one that does not admit the namespace or takes another traffic type',
  },
  {
    code: 'KIA1314',
    message: 'This workload has a sidecar label and ambient redirection',
    rules: ['KFM206', 'KFM207'],
    note: 'KFM206 for injection beside the ambient label; KFM207 for pods that opted out of injection and are enrolled in ambient',
  },
  {
    code: 'KIA1315',
    message: 'This workload has a pod with both a sidecar container and ambient labels',
    rules: ['KFM206'],
    note: 'from the namespace labels that give pods both',
  },
  {
    code: 'KIA1316',
    message: 'This workload has a sidecar but is in an Ambient-enabled namespace',
    rules: ['KFM206'],
    note: 'the namespace keeps injection on beside ambient',
  },
  {
    code: 'KIA1317',
    message: 'This workload has L7 Authorization Policies but no Waypoint',
    rules: ['KFM201', 'KFM211'],
    note: 'as KIA0109',
  },
];
