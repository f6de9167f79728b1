import { frameMode, frameModesSummary, withFrameMode } from './frameKinds';

describe('frame kinds', () => {
  it('reads what a query does with each kind', () => {
    const q = { hideFrames: ['kernel'], collapseFrames: ['native'] };
    expect(frameMode(q, 'kernel')).toBe('hide');
    expect(frameMode(q, 'native')).toBe('collapse');
    expect(frameMode({}, 'kernel')).toBe('show');
    expect(frameModesSummary(q)).toEqual(['Kernel frames: hidden', 'Native frames: collapsed']);
    expect(frameModesSummary({})).toEqual([]);
  });

  it('moves a kind between the lists, keeps the others and drops empty lists', () => {
    expect(withFrameMode({}, 'kernel', 'hide')).toEqual({ hideFrames: ['kernel'], collapseFrames: undefined });
    expect(withFrameMode({ hideFrames: ['kernel', '$more'] }, 'kernel', 'collapse')).toEqual({
      hideFrames: ['$more'],
      collapseFrames: ['kernel'],
    });
    expect(withFrameMode({ collapseFrames: ['kernel'] }, 'kernel', 'show')).toEqual({
      hideFrames: undefined,
      collapseFrames: undefined,
    });
  });
});
