/**
 * A simulated host's Microsoft Defender, answering the two cmdlets the way Windows does:
 * - Get-MpThreat: the history, one MSFT_MpThreat per threat ever detected (ThreatID, ThreatName,
 *   SeverityID, IsActive, Resources), remediated ones included (learn.microsoft.com/powershell/
 *   module/defender/get-mpthreat: "gets the history of threats");
 * - Get-MpThreatDetection: one MSFT_MpThreatDetection per detection (DetectionID, ThreatID,
 *   InitialDetectionTime, ThreatStatusID, Resources), kept after remediation with its new status
 *   until Defender clears it (MPDETECTION_STATE_CLEARED: "does not show up in the state query,
 *   only in history"; learn.microsoft.com/windows/win32/lwef/mpdetection-state).
 * ThreatStatusID follows MPTHREAT_STATUS (learn.microsoft.com/windows/win32/lwef/mpthreat-status).
 *
 * `answerThreatsScript` does what the agent's defenderThreatsScript (src/agent/windows/defender.ts)
 * does with the two answers, and prints what it prints, so SimHostOS reads it with the agent's
 * own parser.
 */
import {
  activeThreatStatuses,
  maxResources,
  maxThreats,
} from '../../src/agent/windows/defender.ts';

export interface SimMpThreat {
  ThreatID: string;
  ThreatName: string;
  SeverityID: number;
  IsActive: boolean;
  Resources: string[];
}

export interface SimMpThreatDetection {
  DetectionID: string;
  ThreatID: string;
  /** ms since the epoch. */
  InitialDetectionTime: number;
  ThreatStatusID: number;
  Resources: string[];
}

/** MPTHREAT_STATUS values (learn.microsoft.com/windows/win32/lwef/mpthreat-status). */
export const threatStatus = {
  detected: 1,
  cleaned: 2,
  quarantined: 3,
  removed: 4,
  allowed: 5,
  blocked: 6,
  quarantineFailed: 103,
} as const;

export class SimDefender {
  /** False: Defender is not installed (no Defender module, so no Get-MpThreat* cmdlets). */
  installed = true;
  readonly #threats = new Map<string, SimMpThreat>();
  #detections: SimMpThreatDetection[] = [];
  #next = 1;

  /** Defender detects a threat: a detection (status Detected) and the threat in the history. */
  detect(threat: {
    id: string;
    name: string;
    severityId: number;
    resources: string[];
    at: number;
  }): string {
    const id = `{00000000-0000-0000-0000-${String(this.#next++).padStart(12, '0')}}`;
    this.#threats.set(threat.id, {
      ThreatID: threat.id,
      ThreatName: threat.name,
      SeverityID: threat.severityId,
      IsActive: true,
      Resources: [...(this.#threats.get(threat.id)?.Resources ?? []), ...threat.resources],
    });
    this.#detections.push({
      DetectionID: id,
      ThreatID: threat.id,
      InitialDetectionTime: threat.at,
      ThreatStatusID: threatStatus.detected,
      Resources: [...threat.resources],
    });
    return id;
  }

  /** Defender acts on a detection (quarantined by default); the threat stays in the history. */
  remediate(detectionId: string, status: number = threatStatus.quarantined): void {
    const detection = this.#detections.find((d) => d.DetectionID === detectionId);
    if (!detection) throw new Error(`no detection ${detectionId}`);
    detection.ThreatStatusID = status;
    const threat = this.#threats.get(detection.ThreatID)!;
    threat.IsActive = this.#detections.some(
      (d) => d.ThreatID === detection.ThreatID && d.ThreatStatusID in activeThreatStatuses,
    );
  }

  /** Defender clears a settled detection from its state: only the history keeps the threat. */
  clear(detectionId: string): void {
    this.#detections = this.#detections.filter((d) => d.DetectionID !== detectionId);
  }

  /** Get-MpThreat. */
  getMpThreat(): SimMpThreat[] {
    return [...this.#threats.values()].map((t) => ({ ...t, Resources: [...t.Resources] }));
  }

  /** Get-MpThreatDetection. */
  getMpThreatDetection(): SimMpThreatDetection[] {
    return this.#detections.map((d) => ({ ...d, Resources: [...d.Resources] }));
  }

  /** What defenderThreatsScript prints on this host. */
  answerThreatsScript(): string {
    if (!this.installed) return JSON.stringify({ ok: true, available: false, threats: [] });
    const known = new Map(this.getMpThreat().map((t) => [t.ThreatID, t]));
    const threats = this.getMpThreatDetection()
      .filter((d) => d.ThreatStatusID in activeThreatStatuses)
      .slice(0, maxThreats)
      .map((d) => {
        const t = known.get(d.ThreatID);
        return {
          id: d.ThreatID,
          name: t?.ThreatName ?? '',
          severityId: t?.SeverityID ?? 0,
          statusId: d.ThreatStatusID,
          detectedAt: d.InitialDetectionTime,
          resources: d.Resources.slice(0, maxResources),
        };
      });
    return JSON.stringify({ ok: true, available: true, threats });
  }
}
