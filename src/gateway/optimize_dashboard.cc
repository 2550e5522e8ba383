#include "gateway/optimize_dashboard.h"

namespace switchyard::gateway {

std::string_view optimizeDashboardHtml() {
  return R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchyard optimizer</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.bad{color:#b00;font-weight:bold}.ok{color:#070}
.bar{display:inline-block;height:.8em;background:#4a7}
</style></head><body>
<h1>Switchyard GPU-mix optimizer</h1>
<div id="status">loading…</div><div id="models"></div>
<script>
function esc(s){return String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));}
function fmt(x,d){return Number(x).toFixed(d===undefined?2:d);}
async function refresh(){
  try{
    const r=await fetch('/debug/optimizer');const j=await r.json();
    document.getElementById('status').innerHTML='interval '+j.interval_s+' s, window '+j.window_s+
      ' s, slice factor '+j.slice_factor+', headroom '+j.headroom+
      (j.config_error?' — <span class="bad">config error: '+esc(j.config_error)+'</span>':'');
    let html='';
    for(const m of j.models){
      html+='<h2>'+esc(m.model)+' — cost '+fmt(m.cost)+'/h, solve '+fmt(m.solve_ms,1)+' ms, '+
        (m.feasible?'<span class="ok">feasible</span>':'<span class="bad">infeasible</span>')+
        (m.timed_out?' <span class="bad">(time limit)</span>':'')+(m.kept_current?' (kept by hysteresis)':'')+'</h2>';
      if(m.note)html+='<div class="bad">'+esc(m.note)+'</div>';
      if(m.load_error)html+='<div class="bad">load: '+esc(m.load_error)+'</div>';
      html+='<div>load: '+fmt(m.load.current_rps)+' req/s now, '+fmt(m.load.window_rps)+
        ' req/s over '+fmt(m.load.window_seconds,0)+' s; failed '+m.load.failed+', rejected '+
        m.load.rejected+', queued '+m.load.queued+'</div>';
      html+='<table><tr><th class="l">deployment</th><th class="l">GPU</th><th>cost/h</th><th>replicas</th><th>override</th><th class="l">serves (prompt×output: req/s)</th></tr>';
      for(const d of m.deployments){
        const cells=d.cells.map(c=>fmt(c.prompt_tokens,0)+'×'+fmt(c.output_tokens,0)+': '+fmt(c.rps)).join(', ');
        html+='<tr><td class="l">'+esc(d.namespace+'/'+d.name)+'</td><td class="l">'+esc(d.gpu)+'</td><td>'+
          fmt(d.cost)+'</td><td>'+d.replicas+'</td><td>'+(d.override<0?'':d.override)+'</td><td class="l">'+esc(cells)+'</td></tr>';
      }
      html+='</table><table><tr><th>prompt</th><th>output</th><th>req/s planned</th><th>now</th><th>window</th><th class="l"></th></tr>';
      const max=Math.max(1e-9,...m.load.cells.map(c=>c.rps));
      for(const c of m.load.cells){
        html+='<tr><td>'+fmt(c.prompt_tokens,0)+'</td><td>'+fmt(c.output_tokens,0)+'</td><td>'+fmt(c.rps)+
          '</td><td>'+fmt(c.current_rps)+'</td><td>'+fmt(c.window_rps)+'</td><td class="l"><span class="bar" style="width:'+
          Math.round(200*c.rps/max)+'px"></span></td></tr>';
      }
      html+='</table>';
    }
    document.getElementById('models').innerHTML=html;
  }catch(e){document.getElementById('status').textContent='cannot read /debug/optimizer: '+e;}
}
refresh();setInterval(refresh,2000);
</script></body></html>
)html";
}

}  // namespace switchyard::gateway
