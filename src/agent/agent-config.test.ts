import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBootstrapConfig } from '../../sim/hosts/agent-test-host.ts';
import { hasCode } from '../errors/catalog.ts';
import { agentConfigFrom, parseAgentConfig, parseBootstrapConfig } from './agent-config.ts';

const agentJson = (nodeIP: string) =>
  JSON.stringify({ ...agentConfigFrom(parseBootstrapConfig(testBootstrapConfig())), nodeIP });

test('a nodeIP the schema pattern lets through but is no IPv4 address is refused, naming agent.json nodeIP and the fix', () => {
  for (const nodeIP of ['999.1.1.1', '10.0.0.256', '010.0.0.1']) {
    assert.throws(
      () => parseAgentConfig(agentJson(nodeIP)),
      (error: Error) => {
        assert.ok(hasCode(error, 'WF_AGENT_CONFIG_INVALID'), nodeIP);
        assert.match(
          error.message,
          new RegExp(
            `agent\\.json:\\n  - nodeIP: "${nodeIP.replaceAll('.', '\\.')}" is not an IPv4 address .* re-bootstrap the host`,
          ),
        );
        return true;
      },
    );
  }
  assert.equal(parseAgentConfig(agentJson('10.0.0.5')).nodeIP, '10.0.0.5');
});

test('bootstrap.json is held to the same nodeIP rule', () => {
  const bad = JSON.stringify({ ...JSON.parse(testBootstrapConfig()), nodeIP: '300.0.0.1' });
  assert.throws(() => parseBootstrapConfig(bad), /nodeIP: "300\.0\.0\.1" is not an IPv4 address/);
});
