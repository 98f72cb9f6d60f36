import assert from 'node:assert/strict';
import test from 'node:test';
import { IndexStore } from '../controller-runtime/index-store.ts';

interface Item {
  name: string;
  build?: string;
  tags?: string[];
}

const byBuild = (i: Item) => (i.build ? [i.build] : []);

test('an index files objects on set and moves them when their value changes', () => {
  const store = new IndexStore<Item>();
  store.addIndex('build', byBuild);
  store.set('a', { name: 'a', build: '2019' });
  store.set('b', { name: 'b', build: '2022' });
  store.set('c', { name: 'c', build: '2022' });
  assert.deepEqual(
    store
      .byIndex('build', '2022')
      .map((i) => i.name)
      .sort(),
    ['b', 'c'],
  );
  assert.equal(store.countByIndex('build', '2019'), 1);
  store.set('a', { name: 'a', build: '2022' });
  assert.equal(store.countByIndex('build', '2019'), 0);
  assert.equal(store.countByIndex('build', '2022'), 3);
  assert.deepEqual(store.indexValues('build'), ['2022'], 'an emptied value is dropped');
  store.set('b', { name: 'b' });
  assert.equal(store.countByIndex('build', '2022'), 2, 'an object filed nowhere leaves its value');
});

test('an updated object is the one the index hands out', () => {
  const store = new IndexStore<Item>();
  store.addIndex('build', byBuild);
  store.set('a', { name: 'a', build: '2019', tags: ['old'] });
  store.set('a', { name: 'a', build: '2019', tags: ['new'] });
  assert.deepEqual(store.firstByIndex('build', '2019')?.tags, ['new']);
  assert.deepEqual(store.byIndex('build', '2019').length, 1);
});

test('delete unfiles the object; deleting an unknown key is a no-op', () => {
  const store = new IndexStore<Item>();
  store.addIndex('build', byBuild);
  store.set('a', { name: 'a', build: '2019' });
  assert.equal(store.delete('a')?.name, 'a');
  assert.equal(store.delete('a'), undefined);
  assert.equal(store.countByIndex('build', '2019'), 0);
  assert.deepEqual(store.indexValues('build'), []);
  assert.equal(store.firstByIndex('build', '2019'), undefined);
});

test('an object can be filed under several values', () => {
  const store = new IndexStore<Item>();
  store.addIndex('tag', (i) => i.tags ?? []);
  store.set('a', { name: 'a', tags: ['x', 'y'] });
  store.set('b', { name: 'b', tags: ['y'] });
  assert.equal(store.countByIndex('tag', 'y'), 2);
  store.set('a', { name: 'a', tags: ['z'] });
  assert.deepEqual(store.indexValues('tag').sort(), ['y', 'z']);
});

test('replace rebuilds every index from the new contents', () => {
  const store = new IndexStore<Item>();
  store.addIndex('build', byBuild);
  store.set('a', { name: 'a', build: '2019' });
  store.replace([
    ['b', { name: 'b', build: '2022' }],
    ['c', { name: 'c', build: '2025' }],
  ]);
  assert.equal(store.size, 2);
  assert.equal(store.get('a'), undefined);
  assert.deepEqual(store.indexValues('build').sort(), ['2022', '2025']);
  assert.equal(store.countByIndex('build', '2019'), 0);
});

test('an index added late files what is stored; a second add of the name keeps the first', () => {
  const store = new IndexStore<Item>();
  store.set('a', { name: 'a', build: '2019' });
  store.addIndex('build', byBuild);
  store.addIndex('build', () => ['other']);
  assert.equal(store.countByIndex('build', '2019'), 1);
  assert.equal(store.countByIndex('build', 'other'), 0);
  assert.ok(store.hasIndex('build'));
  assert.deepEqual(store.byIndex('nope', 'x'), [], 'an unknown index answers nothing');
});

test('findByIndex stops at the first object it takes; reindex files again with what the function reads now', () => {
  const store = new IndexStore<Item>();
  let suffix = '';
  store.addIndex('build', (i) => (i.build ? [`${i.build}${suffix}`] : []));
  for (const name of ['a', 'b', 'c']) store.set(name, { name, build: '2022' });
  const looked: string[] = [];
  const found = store.findByIndex('build', '2022', (i) => {
    looked.push(i.name);
    return i.name !== 'a';
  });
  assert.equal(found?.name, 'b');
  assert.deepEqual(looked, ['a', 'b']);
  assert.equal(
    store.findByIndex('build', '2019', () => true),
    undefined,
  );
  suffix = '-x';
  store.reindex('build');
  assert.deepEqual(store.indexValues('build'), ['2022-x']);
  assert.equal(store.countByIndex('build', '2022-x'), 3);
});

test('a value filed once, twice, then once again answers the same as a bucket', () => {
  const store = new IndexStore<Item>();
  store.addIndex('build', byBuild);
  store.set('a', { name: 'a', build: '2019' });
  store.set('a', { name: 'a', build: '2019', tags: ['again'] });
  assert.equal(store.countByIndex('build', '2019'), 1, 'a key filed again is not counted twice');
  store.set('b', { name: 'b', build: '2019' });
  store.delete('a');
  assert.deepEqual(
    store.byIndex('build', '2019').map((i) => i.name),
    ['b'],
  );
  store.delete('b');
  assert.deepEqual(store.indexValues('build'), []);
});
