import { describe, expect, it } from 'vitest';
import { IMAGE_POLICY_RC_D, freshMachineUnavailable } from '../support/fresh-debian.js';
import { NEWCOMER_TIMEOUT_MS, newcomerRun } from '../support/newcomer.js';

/**
 * README's first command on a fresh Debian 12 machine, as a newcomer runs it: nothing installed but
 * Debian's minimal system, git, Node.js and this image's policy-rc.d; a fresh clone of the commit under
 * test; `bash scripts/try.sh`, which installs everything itself from Debian's and npm's registries.
 * The fresh Debian tree is made once (a minute or two) and kept; each run installs everything again.
 */
/** Packages the demo never needs: firewalls, browsers, container engines and registries (the test suite's tools). */
const FOREIGN = /^(ufw|firewalld|fail2ban|iptables|nftables|chromium.*|firefox.*|podman|docker.*|containerd|runc|crun|conmon|buildah|skopeo)$/;

const unavailable = freshMachineUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`a newcomer's fresh machine${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  it("bash scripts/try.sh on a fresh clone runs to its end and prints README's lines, installing no firewall, browser or container engine; the machine's policy-rc.d is byte for byte and mode as it was", async () => {
    const { run, problems, policy, packages } = await newcomerRun();
    expect(run.code, `${run.failure?.message ?? ''}\n${run.stdout}\n${run.stderr}`).toBe(0);
    expect(problems, `it printed:\n${run.stdout}`).toEqual([]);
    expect(policy.before?.text).toBe(IMAGE_POLICY_RC_D);
    expect(policy.after).toEqual(policy.before);
    // Only what the demo uses: no firewall, no browser, no container engine or registry.
    expect(packages.filter((p) => FOREIGN.test(p))).toEqual([]);
    expect(packages).toContain('nats-server');
  }, NEWCOMER_TIMEOUT_MS + 600_000);
});
