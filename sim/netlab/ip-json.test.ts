/**
 * The iproute2 JSON readers on output captured from iproute2 6.1 in a namespace holding what
 * flanneld programs for a remote VXLAN lease (a route via <subnet>.0 onlink, a permanent
 * neighbour, a VTEP FDB entry), and on the malformed entries they must refuse.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAddresses, parseFdb, parseLinks, parseNeighbours, parseRoutes } from './ip-json.ts';

const routes =
  '[{"dst":"10.244.2.0/24","gateway":"10.244.2.0","dev":"flannel.4096","flags":["onlink"]},{"dst":"192.0.2.0/24","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"192.0.2.11","flags":["linkdown"]},{"type":"local","dst":"10.244.1.0","dev":"flannel.4096","table":"local","protocol":"kernel","scope":"host","prefsrc":"10.244.1.0","flags":[]},{"dst":"fe80::/64","dev":"br0","protocol":"kernel","metric":256,"flags":[],"pref":"medium"}]';
const neighbours =
  '[{"dst":"10.244.2.0","dev":"flannel.4096","lladdr":"0e:2a:00:00:00:02","state":["PERMANENT"]},{"dst":"192.0.2.12","dev":"eth0","state":["FAILED"]}]';
const fdb =
  '[{"mac":"33:33:00:00:00:01","ifname":"eth0","flags":["self"],"state":"permanent"},{"mac":"0e:2a:00:00:00:02","ifname":"flannel.4096","dst":"192.0.2.12","flags":["self"],"state":"permanent"},{"mac":"0e:d3:db:6c:7e:17","ifname":"vp1","flags":[],"master":"br0","state":"permanent"}]';
const vxlanLink =
  '[{"ifindex":3,"ifname":"flannel.4096","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1450,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"0e:2a:00:00:00:01","broadcast":"ff:ff:ff:ff:ff:ff","promiscuity":0,"allmulti":0,"min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"vxlan","info_data":{"id":4096,"local":"192.0.2.11","link":"eth0","port_range":{"low":0,"high":0},"port":4789,"learning":false,"ttl":0,"df":"unset","ageing":300,"udp_csum":true,"udp_zero_csum6_tx":false,"udp_zero_csum6_rx":false}},"inet6_addr_gen_mode":"eui64","num_tx_queues":1,"num_rx_queues":1,"gso_max_size":65536,"gso_max_segs":65535,"tso_max_size":524280,"tso_max_segs":65535,"gro_max_size":65536}]';
const statsLink =
  '[{"ifindex":3,"ifname":"flannel.4096","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1450,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"0e:2a:00:00:00:01","broadcast":"ff:ff:ff:ff:ff:ff","stats64":{"rx":{"bytes":0,"packets":0,"errors":0,"dropped":0,"over_errors":0,"multicast":0},"tx":{"bytes":98,"packets":1,"errors":0,"dropped":1,"carrier_errors":0,"collisions":0}}}]';
const addresses =
  '[{"ifindex":2,"link_index":2,"ifname":"eth0","flags":["NO-CARRIER","BROADCAST","MULTICAST","UP"],"mtu":1500,"qdisc":"noqueue","operstate":"DOWN","group":"default","txqlen":1000,"link_type":"ether","address":"fe:f5:f9:34:c5:13","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"addr_info":[{"family":"inet","local":"192.0.2.11","prefixlen":24,"scope":"global","label":"eth0","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]';

test('routes: the onlink VXLAN route, kernel and local routes', () => {
  const parsed = parseRoutes(routes);
  assert.deepEqual(parsed[0], {
    dst: '10.244.2.0/24',
    gateway: '10.244.2.0',
    dev: 'flannel.4096',
    flags: ['onlink'],
  });
  assert.deepEqual(parsed[1], {
    dst: '192.0.2.0/24',
    dev: 'eth0',
    protocol: 'kernel',
    scope: 'link',
    prefsrc: '192.0.2.11',
    flags: ['linkdown'],
  });
  assert.equal(parsed[2]?.type, 'local');
  assert.equal(parsed[2]?.table, 'local');
  assert.equal(parsed[3]?.metric, 256);
  assert.deepEqual(parseRoutes(''), []);
  assert.deepEqual(parseRoutes('[]'), []);
});

test('routes: a missing dev, flags that are not strings, or not JSON are refused, naming the field', () => {
  assert.throws(
    () => parseRoutes('[{"dst":"10.0.0.0/8","flags":[]}]'),
    /entry 0 has dev undefined, expected a device name/,
  );
  assert.deepEqual(
    parseRoutes('[{"type":"blackhole","dst":"10.0.0.0/8","flags":[]}]')[0]?.dev,
    undefined,
  );
  assert.throws(
    () => parseRoutes('[{"dst":"10.0.0.0/8","dev":"eth0","flags":[1]}]'),
    /flags \[1\], expected an array of strings/,
  );
  assert.throws(() => parseRoutes('{"dst":"x"}'), /expected a JSON array/);
  assert.throws(() => parseRoutes('Error: any valid prefix is expected'), /not JSON/);
  assert.throws(
    () => parseRoutes('[{"dst":"","dev":"eth0","flags":[]}]'),
    /dst "", expected a non-empty string/,
  );
});

test('neighbours: a permanent entry with its MAC, an unresolved one without', () => {
  assert.deepEqual(parseNeighbours(neighbours), [
    { dst: '10.244.2.0', dev: 'flannel.4096', lladdr: '0e:2a:00:00:00:02', state: ['PERMANENT'] },
    { dst: '192.0.2.12', dev: 'eth0', state: ['FAILED'] },
  ]);
  assert.throws(
    () =>
      parseNeighbours('[{"dst":"10.244.2.0","lladdr":"0e:2a:00:00:00:02","state":["PERMANENT"]}]'),
    /dev undefined/,
  );
  assert.throws(
    () => parseNeighbours('[{"dst":"1.2.3.4","dev":"x","lladdr":"0E:2A:00:00:00:02","state":[]}]'),
    /expected a MAC address/,
  );
});

test('fdb: the VTEP entry with its remote, a bridge port entry with its master', () => {
  const parsed = parseFdb(fdb);
  assert.deepEqual(parsed[1], {
    mac: '0e:2a:00:00:00:02',
    ifname: 'flannel.4096',
    dst: '192.0.2.12',
    flags: ['self'],
    state: 'permanent',
  });
  assert.deepEqual(parsed[2], {
    mac: '0e:d3:db:6c:7e:17',
    ifname: 'vp1',
    flags: [],
    master: 'br0',
    state: 'permanent',
  });
  // A learned entry on a pod's port (a Linux node's cni0 after its pod spoke): state "".
  assert.deepEqual(
    parseFdb(
      '[{"mac":"e2:00:b5:39:80:ec","ifname":"vethcc9fc44b","flags":[],"master":"cni0","state":""}]',
    ),
    [{ mac: 'e2:00:b5:39:80:ec', ifname: 'vethcc9fc44b', flags: [], master: 'cni0' }],
  );
  assert.throws(() => parseFdb('[{"mac":"0e:2a:00:00:00:02","flags":[]}]'), /ifname undefined/);
});

test('links: VXLAN settings with -d, counters with -s', () => {
  const [vx] = parseLinks(vxlanLink);
  assert.deepEqual(vx, {
    ifindex: 3,
    ifname: 'flannel.4096',
    flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'],
    mtu: 1450,
    operstate: 'UNKNOWN',
    address: '0e:2a:00:00:00:01',
    kind: 'vxlan',
    vxlan: { id: 4096, port: 4789, local: '192.0.2.11', link: 'eth0', learning: false },
  });
  const [withStats] = parseLinks(statsLink);
  assert.deepEqual(withStats?.stats, {
    rxPackets: 0,
    rxBytes: 0,
    rxDropped: 0,
    txPackets: 1,
    txBytes: 98,
    txDropped: 1,
  });
  assert.throws(
    () => parseLinks(vxlanLink.replace('"port":4789', '"port":"4789"')),
    /flannel.4096 linkinfo.info_data.*port "4789", expected a non-negative integer/,
  );
  assert.throws(() => parseLinks(vxlanLink.replace('"mtu":1450', '"mtu":-1')), /mtu -1/);
});

test('addresses: each interface with its inet addresses', () => {
  assert.deepEqual(parseAddresses(addresses), [
    { ifname: 'eth0', addresses: [{ family: 'inet', local: '192.0.2.11', prefixlen: 24 }] },
  ]);
  assert.throws(
    () => parseAddresses('[{"ifname":"eth0"}]'),
    /addr_info undefined, expected an array/,
  );
});
