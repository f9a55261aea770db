/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it: a replica takes the lease
 * when it is free or expired (its last renewal older than its duration), renews it every retry period
 * while it leads, and stops leading when it could not renew within the renew deadline. Updates carry
 * the resourceVersion read, so of two replicas racing for the lease one gets a 409 and waits. The
 * decision is a pure function of the lease and the clock; the elector runs it against the API server.
 */
import { KubeApiError, type KubeClient } from '../kube/client.ts';

/** The fields of a Lease's spec that leader election uses. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface ElectionTimings {
  /** How long a lease holds without renewal (client-go default 15 s). */
  leaseDurationSeconds: number;
  /** How long a leader keeps trying to renew before it gives up (10 s). */
  renewDeadlineSeconds: number;
  /** How often every replica tries (2 s). */
  retryPeriodSeconds: number;
}

const DefaultTimings: ElectionTimings = {
  leaseDurationSeconds: 15,
  renewDeadlineSeconds: 10,
  retryPeriodSeconds: 2,
};

/** Kubernetes' MicroTime: RFC 3339 with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * What a replica does with the lease as it finds it (undefined: no Lease yet): `renew` its own, `acquire`
 * a free or expired one (with the spec to write), or `wait` while another replica holds it.
 */
export function decide(
  current: LeaseSpec | undefined,
  identity: string,
  nowMs: number,
  timings: ElectionTimings = DefaultTimings,
): { action: 'renew' | 'acquire' | 'wait'; spec: LeaseSpec } {
  const now = microTime(nowMs);
  const holder = current?.holderIdentity ?? '';
  if (current && holder === identity) return { action: 'renew', spec: { ...current, renewTime: now } };
  const renewed = current?.renewTime ? Date.parse(current.renewTime) : 0;
  const duration = (current?.leaseDurationSeconds ?? timings.leaseDurationSeconds) * 1000;
  if (current && holder !== '' && renewed + duration > nowMs) return { action: 'wait', spec: current };
  return {
    action: 'acquire',
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds: timings.leaseDurationSeconds,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: (current?.leaseTransitions ?? -1) + 1,
    },
  };
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Runs leader election for one replica. */
export class LeaderElector {
  readonly #client: KubeClient;
  readonly #namespace: string;
  readonly #name: string;
  readonly identity: string;
  readonly #timings: ElectionTimings;
  #leading = false;
  /** When this replica last renewed (or took) the lease (epoch ms). */
  #lastRenewal = 0;
  #stopped = false;
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(
    client: KubeClient,
    options: { namespace: string; name: string; identity: string; timings?: ElectionTimings },
  ) {
    this.#client = client;
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.identity = options.identity;
    this.#timings = options.timings ?? DefaultTimings;
  }

  /** Leading, and within the renew deadline of the last renewal. */
  get leading(): boolean {
    return this.#leading && Date.now() < this.writeDeadline();
  }

  /**
   * Until when (epoch ms) this replica may act as leader: its last renewal plus the renew deadline, which
   * ends before the lease can expire for the other replicas (last renewal plus the lease duration). 0 when
   * it does not lead.
   */
  writeDeadline(): number {
    return this.#leading ? this.#lastRenewal + this.#timings.renewDeadlineSeconds * 1000 : 0;
  }

  /**
   * Tries every retry period; calls `started` when this replica becomes leader and `lost` when it can no
   * longer renew (then returns). Returns when stopped.
   */
  run(started: () => void, lost: () => void): Promise<void> {
    this.#running = this.#loop(started, lost);
    return this.#running;
  }

  async #loop(started: () => void, lost: () => void): Promise<void> {
    while (!this.#stopped) {
      // Each attempt gets a deadline: a leader's ends at its renew deadline, so a stalled connection can't
      // keep it believing it leads; a candidate's is one retry period.
      const attemptStart = Date.now();
      const budget = this.#leading
        ? this.writeDeadline() - attemptStart
        : this.#timings.retryPeriodSeconds * 1000;
      const ok = budget > 0 && (await this.#tryAcquireOrRenew(attemptStart + budget).catch(() => false));
      const now = Date.now();
      if (ok) {
        // The renewal counts from when it was sent: the server may have written it at any time since.
        this.#lastRenewal = attemptStart;
        if (!this.#leading) {
          this.#leading = true;
          started();
        }
      } else if (this.#leading && now >= this.writeDeadline()) {
        this.#leading = false;
        lost();
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#timings.retryPeriodSeconds * 1000);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Stops trying; a leader gives the lease up, so another replica takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    // Let a renewal under way finish first, or it would take the lease back after the release.
    await this.#running;
    if (!this.#leading) return;
    this.#leading = false;
    const lease = await this.#read().catch(() => undefined);
    if (lease?.spec?.holderIdentity !== this.identity) return;
    await this.#client
      .request('PUT', this.#path(), {
        body: {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: '',
            leaseDurationSeconds: 1,
            renewTime: microTime(Date.now()),
          },
        },
      })
      .catch(() => undefined);
  }

  async #tryAcquireOrRenew(deadline: number): Promise<boolean> {
    const timeoutMs = () => Math.max(1, deadline - Date.now());
    const lease = await this.#read(timeoutMs());
    const decision = decide(lease?.spec, this.identity, Date.now(), this.#timings);
    if (decision.action === 'wait') return false;
    try {
      if (!lease)
        await this.#client.request('POST', this.#path(false), {
          timeoutMs: timeoutMs(),
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.#name, namespace: this.#namespace },
            spec: decision.spec,
          },
        });
      else
        await this.#client.request('PUT', this.#path(), {
          timeoutMs: timeoutMs(),
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: lease.metadata,
            spec: decision.spec,
          },
        });
      return true;
    } catch (error) {
      if (error instanceof KubeApiError && (error.status === 409 || error.status === 422)) return false;
      throw error;
    }
  }

  async #read(timeoutMs?: number): Promise<Lease | undefined> {
    try {
      return await this.#client.request<Lease>('GET', this.#path(), timeoutMs ? { timeoutMs } : {});
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  #path(withName = true): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${this.#namespace}/leases`;
    return withName ? `${base}/${this.#name}` : base;
  }
}
