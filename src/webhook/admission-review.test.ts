import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorCode } from '../errors/catalog.ts';
import {
  admissionInputError,
  admissionInputStatus,
  parseAdmissionReview,
} from './admission-review.ts';

const review = (request: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1', request, ...extra });
const request = {
  uid: 'u-1',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  operation: 'CREATE',
  object: {},
};

test('a body that is not a usable AdmissionReview is WF_ADMISSION_INPUT naming the field, answered 400', () => {
  const refused: [string, RegExp][] = [
    ['{', /^Request body is not JSON/],
    ['[]', /^Request body must be a JSON object/],
    [JSON.stringify({ kind: 'Pod' }), /^kind: expected "AdmissionReview"/],
    [
      review(request, { apiVersion: 'admission.k8s.io/v1beta1' }),
      /^apiVersion: .*admissionReviewVersions: \[v1\]/,
    ],
    [review(null), /^request: missing/],
    [review({ ...request, uid: '' }), /^request\.uid:/],
    [review({ ...request, uid: 'u'.repeat(129) }), /^request\.uid:/],
    [review({ ...request, kind: 'Pod' }), /^request\.kind:/],
    [review({ ...request, operation: 1 }), /^request\.operation:/],
    [review({ ...request, object: [] }), /^request\.object:/],
    [review({ ...request, oldObject: 'x' }), /^request\.oldObject:/],
    [review({ ...request, subResource: 2 }), /^request\.subResource:/],
  ];
  for (const [body, message] of refused) {
    assert.throws(
      () => parseAdmissionReview(body),
      (error: Error) => {
        assert.equal(errorCode(error), 'WF_ADMISSION_INPUT', body);
        assert.match(error.message, message);
        assert.equal(admissionInputStatus(error), 400);
        return true;
      },
    );
  }
  assert.equal(parseAdmissionReview(review(request)).uid, 'u-1');
});

test('an admission input error may carry another status; other errors answer 400', () => {
  assert.equal(admissionInputStatus(admissionInputError('too large', 413)), 413);
  assert.equal(admissionInputStatus(new Error('boom')), 400);
});
