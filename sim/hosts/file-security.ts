/**
 * Who may read and write what on a simulated host's drive C:: just enough of NTFS security to
 * show that a non-admin account can or cannot read the node's key. Each path may carry an
 * explicit security descriptor (an owner, a DACL of allow entries, and whether the DACL is
 * protected); a path without one inherits. The rules follow Windows:
 * - inheritance: an entry that applies to children is inherited by every file and folder
 *   below, unless a DACL on the way is protected (SE_DACL_PROTECTED), which blocks what its
 *   parents pass down ("ACE inheritance rules",
 *   https://learn.microsoft.com/windows/win32/secauthz/ace-inheritance-rules, and "Automatic
 *   propagation of inheritable ACEs",
 *   https://learn.microsoft.com/windows/win32/secauthz/automatic-propagation-of-inheritable-aces:
 *   a changed parent DACL reaches its children at once, as computing it on each check does);
 * - `ObjectSecurity.SetAccessRuleProtection(true, false)` then `Set-Acl` replaces a DACL with
 *   a protected one that keeps no inherited entry
 *   (https://learn.microsoft.com/dotnet/api/system.security.accesscontrol.objectsecurity.setaccessruleprotection,
 *   https://learn.microsoft.com/powershell/module/microsoft.powershell.security/set-acl);
 * - access is granted only by an entry for one of the caller's SIDs (no entry: denied).
 * Left out: deny entries, rights finer than read/write (write stands for write data, append,
 * add file/subfolder and delete), the owner's implicit right to change the DACL, CREATOR
 * OWNER, and persistence across a restart of the simulation process (security lives in
 * memory, like the SCM's runtime state; files persist on disk).
 */

/** Well-known SIDs (https://learn.microsoft.com/windows/win32/secauthz/well-known-sids). */
export const wellKnownSid = {
  everyone: 'S-1-1-0',
  authenticatedUsers: 'S-1-5-11',
  system: 'S-1-5-18',
  administrators: 'S-1-5-32-544',
  users: 'S-1-5-32-545',
} as const;

/** One allow entry. `scope`: this path only, its children only (inherit-only), or both. */
export interface AccessEntry {
  sid: string;
  read: boolean;
  write: boolean;
  scope?: 'this' | 'children' | 'all';
}

/** An explicit security descriptor set on a path. */
export interface SecurityDescriptor {
  owner: string;
  /** Blocks inheritance from the parent. */
  protected: boolean;
  entries: AccessEntry[];
}

/** Who is asking: the account's name, its own SID and its groups' SIDs. */
export interface Principal {
  name: string;
  sids: readonly string[];
}

/** An administrator (what the operator logs in as; the agent runs as SYSTEM). */
export const administratorPrincipal: Principal = {
  name: 'Administrator',
  sids: [
    'S-1-5-21-1004336348-1177238915-682003330-500',
    wellKnownSid.administrators,
    wellKnownSid.users,
    wellKnownSid.authenticatedUsers,
    wellKnownSid.everyone,
  ],
};

/** A local account that is only in Users, with relative id `rid` (1001 and up). */
export function standardUserPrincipal(name: string, rid: number): Principal {
  return {
    name,
    sids: [
      `S-1-5-21-1004336348-1177238915-682003330-${rid}`,
      wellKnownSid.users,
      wellKnownSid.authenticatedUsers,
      wellKnownSid.everyone,
    ],
  };
}

/**
 * C:\ as Windows Server 2019–2025 installs it (`icacls C:\`): SYSTEM and Administrators full
 * control, Users read and execute, Authenticated Users may create folders in C:\ and modify
 * everything below it. So a folder an administrator creates in C:\ (C:\k) is readable by every
 * user and writable by every authenticated one, until its DACL is protected.
 */
export const driveRootSecurity: SecurityDescriptor = {
  owner: 'S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464', // TrustedInstaller
  protected: true,
  entries: [
    { sid: wellKnownSid.system, read: true, write: true },
    { sid: wellKnownSid.administrators, read: true, write: true },
    { sid: wellKnownSid.users, read: true, write: false },
    { sid: wellKnownSid.authenticatedUsers, read: false, write: true, scope: 'this' },
    { sid: wellKnownSid.authenticatedUsers, read: true, write: true, scope: 'children' },
  ],
};

/** What applies to a path: its owner and effective DACL (explicit then inherited entries). */
export interface EffectiveSecurity {
  owner: string;
  protected: boolean;
  entries: AccessEntry[];
}

/**
 * The effective security of the path whose explicit descriptors, from the drive root down to
 * the path itself, are `chain` (undefined where a path has none). A path without an explicit
 * owner is owned by Administrators (an elevated administrator's objects are).
 */
export function effectiveSecurity(chain: (SecurityDescriptor | undefined)[]): EffectiveSecurity {
  let inheritable: AccessEntry[] = [];
  let result: EffectiveSecurity = {
    owner: wellKnownSid.administrators,
    protected: false,
    entries: [],
  };
  for (const explicit of chain) {
    const own = explicit?.entries ?? [];
    const inherited = explicit?.protected ? [] : inheritable;
    result = {
      owner: explicit?.owner ?? wellKnownSid.administrators,
      protected: explicit?.protected ?? false,
      entries: [...own.filter((e) => (e.scope ?? 'all') !== 'children'), ...inherited],
    };
    inheritable = [
      ...own
        .filter((e) => (e.scope ?? 'all') !== 'this')
        .map((e) => ({ sid: e.sid, read: e.read, write: e.write })),
      ...inherited,
    ];
  }
  return result;
}

/** Whether `entries` grant `principal` the `access`. */
export function isGranted(
  entries: readonly AccessEntry[],
  principal: Principal,
  access: 'read' | 'write',
): boolean {
  return entries.some((e) => principal.sids.includes(e.sid) && e[access]);
}
